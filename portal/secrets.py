"""Reading Secret and ConfigMap values for the portal's own controllers (the Job controller's
``secretKeyRef``/``configMapKeyRef``, the artifact store's credentials).

These are internal reads by the control plane, not authorized per user: whoever asks must
already have admitted the object that names the reference. A terminating object still counts
(Kubernetes keeps serving it until its finalizers are gone). Errors name the object and the
key, never a value.
"""

from __future__ import annotations

from portal.config_kinds import decoded
from portal.models import ConfigMap, Secret


class MissingReference(Exception):
    """A referenced Secret/ConfigMap, or a key in it, does not exist."""


def _secret(namespace: str, name: str) -> Secret:
    found = Secret.objects.filter(namespace=namespace, name=name).first()
    if found is None:
        raise MissingReference(f"secret {namespace}/{name} not found")
    return found


def _config_map(namespace: str, name: str) -> ConfigMap:
    found = ConfigMap.objects.filter(namespace=namespace, name=name).first()
    if found is None:
        raise MissingReference(f"configmap {namespace}/{name} not found")
    return found


def _decode(value: str, key: str, where: str) -> bytes:
    raw = decoded(value)
    if raw is None:  # validation admits only base64; a row written around it is corrupt
        raise MissingReference(f"key {key} of {where} is not valid base64")
    return raw


def secret_data(namespace: str, name: str) -> dict[str, bytes]:
    """Every key of the Secret, decoded."""
    where = f"secret {namespace}/{name}"
    return {
        key: _decode(value, key, where)
        for key, value in (_secret(namespace, name).data or {}).items()
    }


def secret_value(namespace: str, name: str, key: str) -> bytes:
    data = _secret(namespace, name).data or {}
    if key not in data:
        raise MissingReference(f"key {key} not found in secret {namespace}/{name}")
    return _decode(data[key], key, f"secret {namespace}/{name}")


def config_map_value(namespace: str, name: str, key: str) -> str:
    """A ``data`` key's string (a ``binaryData`` key is decoded as UTF-8, as a volume would)."""
    found = _config_map(namespace, name)
    if key in (found.data or {}):
        return found.data[key]
    if key in (found.binary_data or {}):
        where = f"configmap {namespace}/{name}"
        try:
            return _decode(found.binary_data[key], key, where).decode("utf-8")
        except UnicodeDecodeError:
            raise MissingReference(f"key {key} of {where} is binary, not UTF-8 text") from None
    raise MissingReference(f"key {key} not found in configmap {namespace}/{name}")
