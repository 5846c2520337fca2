"""A Job's ``env``: literal values, or keys of Secrets and ConfigMaps in the Job's namespace
with Kubernetes' ``optional`` semantics (a missing optional object or key leaves the variable
unset; a missing required one holds the Job with the object and key named, never a value).

``check`` is the acceptance test; ``resolve`` reads the values when the execution is created
(the values go to the adapter only: never into status or events); ``secret_values`` are the
values an adapter masks (``***``) in the Job's log and outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from portal.secrets import MissingReference, config_map_value, secret_value

__all__ = ["MissingReference", "check", "resolve", "secret_values"]


def _value(namespace: str, source: Mapping[str, Any]) -> str | None:
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        try:
            raw = secret_value(namespace, ref["name"], ref["key"])
        except MissingReference:
            if ref.get("optional"):
                return None
            raise
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MissingReference(
                f"key {ref['key']} of Secret {namespace}/{ref['name']} is not UTF-8 text"
            ) from None
    ref = source["configMapKeyRef"]
    try:
        return config_map_value(namespace, ref["name"], ref["key"])
    except MissingReference:
        if ref.get("optional"):
            return None
        raise


def resolve(namespace: str, env: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    """Every variable's value (optional misses left out); raises MissingReference."""
    values: dict[str, str] = {}
    for var in env or ():
        if "valueFrom" in var:
            value = _value(namespace, var["valueFrom"])
            if value is not None:
                values[var["name"]] = value
        else:
            values[var["name"]] = var.get("value", "")
    return values


def check(namespace: str, env: Iterable[Mapping[str, Any]] | None) -> str:
    """Why the env cannot be resolved ("" when it can)."""
    try:
        resolve(namespace, env)
    except MissingReference as exc:
        return str(exc)
    return ""


def secret_values(namespace: str, env: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """The values the env takes from Secrets (to mask in logs and outputs); a missing
    reference is left out."""
    values = []
    for var in env or ():
        source = var.get("valueFrom") or {}
        if "secretKeyRef" in source:
            try:
                value = _value(namespace, source)
            except MissingReference:
                continue
            if value:
                values.append(value)
    return values


def uses_secrets(env: Iterable[Mapping[str, Any]] | None) -> bool:
    return any("secretKeyRef" in (var.get("valueFrom") or {}) for var in env or ())
