"""Waiting on one object through the watch API (``fieldSelector=metadata.name=…``), as
``kubectl wait`` does: read it, then watch from its resourceVersion until a predicate holds
or the time is up. A watch that ends or expires (410) is reopened from a fresh read."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .connection import Connection
from .errors import ApiError
from .resources import Resource

WATCH_WINDOW = 30.0  # seconds a single watch stays open before it is reopened


def wait_for(
    conn: Connection,
    resource: Resource,
    namespace: str,
    name: str,
    done: Callable[[dict[str, Any]], bool],
    *,
    timeout: float | None = None,
    on_change: Callable[[dict[str, Any]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[dict[str, Any], bool]:
    """(the last object seen, whether ``done`` held before ``timeout`` seconds passed).
    ``on_change`` sees every version read; a deleted object is a NotFound ApiError."""
    deadline = None if timeout is None else clock() + timeout
    obj = conn.json("GET", resource.path(namespace, name))
    while True:
        if on_change:
            on_change(obj)
        if done(obj):
            return obj, True
        left = WATCH_WINDOW if deadline is None else min(WATCH_WINDOW, deadline - clock())
        if left <= 0:
            return obj, False
        version = (obj.get("metadata") or {}).get("resourceVersion")
        query = {
            "fieldSelector": f"metadata.name={name}",
            "resourceVersion": version,
            "timeoutSeconds": max(1, int(left)),
        }
        changed = None
        for event in conn.watch(resource.path(namespace), query, timeout=left + 5):
            kind = event.get("type")
            if kind == "DELETED":
                raise ApiError(404, "NotFound", f'{resource.kind} "{name}" was deleted')
            if kind in ("ADDED", "MODIFIED"):
                changed = event.get("object") or {}
                if on_change:
                    on_change(changed)
                if done(changed):
                    return changed, True
            elif kind == "ERROR":
                break  # 410 Gone and the like: read afresh
        obj = changed or conn.json("GET", resource.path(namespace, name))
