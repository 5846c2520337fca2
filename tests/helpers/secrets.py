"""Secret and ConfigMap URLs and bodies; ``VALUE`` is a value no response may ever show."""

from __future__ import annotations

import base64

CORE = "/api/v1"
VALUE = "hunter2-do-not-show"
VALUE_B64 = base64.b64encode(VALUE.encode()).decode()


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def secrets_url(namespace: str | None = "default", name: str = "") -> str:
    base = f"{CORE}/namespaces/{namespace}/secrets" if namespace else f"{CORE}/secrets"
    return f"{base}/{name}" if name else base


def config_maps_url(namespace: str | None = "default", name: str = "") -> str:
    base = f"{CORE}/namespaces/{namespace}/configmaps" if namespace else f"{CORE}/configmaps"
    return f"{base}/{name}" if name else base


def secret(name: str, data: dict | None = None, **fields) -> dict:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}
    if data is not None:
        body["data"] = data
    return body


def config_map(name: str, data: dict | None = None, **fields) -> dict:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}
    if data is not None:
        body["data"] = data
    return body


def make_secret(namespace: str = "default", name: str = "creds", **data: str):
    """A Secret written through the store as the operator (values given as plain text)."""
    from portal.machinery import store
    from portal.machinery.registry import registry
    from tests.helpers.operator import OPERATOR

    if namespace != "default":
        namespaces = registry.get("", "v1", "namespaces")
        if not namespaces.model.objects.filter(name=namespace).exists():
            store.create(namespaces, {"metadata": {"name": namespace}}, context=OPERATOR)
    kind = registry.get("", "v1", "secrets")
    body = secret(name, {key: b64(value) for key, value in data.items()})
    return store.create(kind, body, namespace=namespace, context=OPERATOR)
