"""The invoke URL's path, made and read in one place: what a Ready Run's ``status.endpoint.url``
ends with (after the gateway's base URL) and what the gateway answers."""

from __future__ import annotations

PREFIX = "/v1/namespaces/"
SUFFIX = "/invoke"


def invoke_path(namespace: str, name: str, uid: str) -> str:
    """``/v1/namespaces/{namespace}/runs/{name}/{uid}/invoke``."""
    return f"{PREFIX}{namespace}/runs/{name}/{uid}{SUFFIX}"


def invoke_target(path: str) -> tuple[str, str, str] | None:
    """(namespace, name, uid) of an invoke path, or None for any other path."""
    if not path.startswith(PREFIX) or not path.endswith(SUFFIX):
        return None
    parts = path.split("/")
    # "", "v1", "namespaces", ns, "runs", name, uid, "invoke"
    if len(parts) != 8 or parts[4] != "runs" or not (parts[3] and parts[5] and parts[6]):
        return None
    return parts[3], parts[5], parts[6]
