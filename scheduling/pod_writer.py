"""The one writer of RuntimePod rows: the providers, the heartbeat, the beat pass and the admin
create, change and remove pods only through here (``tests/scheduling/test_pod_writer.py``
fails on any other module that writes them).

A change of what the pod is (``RECORDED``: names, uid, provider, phase, readiness, capacity,
labels, annotations, host, pid, workspace path) takes the next resourceVersion from the
cluster's one counter and records its watch event (``portal.machinery.history``) in the same
transaction, as every other kind's write does; so a watch of ``runtimepods`` sees it, and the
kind's watchers (the scheduler, the workspace controller) are woken by it.

The heartbeat proper (``last_heartbeat``, ``active_runs``) changes every few seconds per pod
and is kept out of the object, as Kubernetes keeps a node's heartbeat in a Lease: writing only
those is one plain UPDATE, no version and no event. A list or get shows them as the row has
them; a watch event shows them as they were at the pod's last recorded change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from portal.machinery import history
from portal.machinery.registry import ResourceKind, registry
from scheduling.models import RuntimePod

HEARTBEAT_FIELDS = frozenset({"last_heartbeat", "active_runs"})


def _kind() -> ResourceKind:
    kind = registry.for_model(RuntimePod)
    if kind is None:  # registered by the scheduling app's ready()
        raise LookupError("the RuntimePod kind is not registered")
    return kind


def _versions(count: int) -> Iterable[int]:
    """``count`` new resourceVersions, in order."""
    top = history.allocate(count)
    return range(top - count + 1, top + 1)


def create(**fields: Any) -> RuntimePod:
    """A new pod row, recorded ADDED."""
    return create_many([RuntimePod(**fields)])[0]


def create_many(pods: list[RuntimePod]) -> list[RuntimePod]:
    """New pod rows in one INSERT, each recorded ADDED."""
    if not pods:
        return pods
    with transaction.atomic(savepoint=False):
        for version, pod in zip(_versions(len(pods)), pods, strict=True):
            pod.resource_version = version
        if len(pods) == 1:
            pods[0].save(force_insert=True)
        else:
            RuntimePod.objects.bulk_create(pods)  # keys returned (PostgreSQL, SQLite)
        history.record_many(_kind(), pods, history.ADDED)
    return pods


def _changes(pod: RuntimePod, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in fields.items()
        if key not in HEARTBEAT_FIELDS and getattr(pod, key) != value
    }


def update(pod: RuntimePod, **fields: Any) -> bool:
    """Write ``fields`` on ``pod``'s row (read under ``select_for_update`` by the caller, so no
    other writer moves it meanwhile); ``pod`` then holds them. Returns whether the change was
    recorded: only a change of a recorded field takes a version; heartbeat fields alone are
    one plain UPDATE."""
    changed = _changes(pod, fields)
    written = {**{k: v for k, v in fields.items() if k in HEARTBEAT_FIELDS}, **changed}
    if not written:
        return False
    with transaction.atomic(savepoint=False):
        if changed:
            written["resource_version"] = history.allocate()
        RuntimePod.objects.filter(pk=pod.pk).update(**written)
        for key, value in written.items():
            setattr(pod, key, value)
        if changed:
            history.record(_kind(), pod, history.MODIFIED)
    return bool(changed)


def update_where(rows: QuerySet[RuntimePod], **fields: Any) -> int:
    """``update`` for every row of ``rows`` (locked here, in primary-key order); returns how
    many changes were recorded."""
    if HEARTBEAT_FIELDS.issuperset(fields):
        rows.update(**fields)
        return 0
    with transaction.atomic(savepoint=False):
        locked = list(rows.select_for_update().order_by("pk"))
        changed = [pod for pod in locked if _changes(pod, fields)]
        if len(changed) < len(locked) and not HEARTBEAT_FIELDS.isdisjoint(fields):
            beat = {k: v for k, v in fields.items() if k in HEARTBEAT_FIELDS}
            unchanged = {pod.pk for pod in locked} - {pod.pk for pod in changed}
            RuntimePod.objects.filter(pk__in=unchanged).update(**beat)
        if not changed:
            return 0
        for version, pod in zip(_versions(len(changed)), changed, strict=True):
            for key, value in fields.items():
                setattr(pod, key, value)
            pod.resource_version = version
        RuntimePod.objects.bulk_update(changed, [*fields, "resource_version"])
        history.record_many(_kind(), changed, history.MODIFIED)
    return len(changed)


def delete_where(rows: QuerySet[RuntimePod]) -> int:
    """Remove the rows of ``rows``, each recorded DELETED (as it was, at a new version);
    returns how many."""
    with transaction.atomic(savepoint=False):
        doomed = list(rows.select_for_update().order_by("pk"))
        if not doomed:
            return 0
        RuntimePod.objects.filter(pk__in=[pod.pk for pod in doomed]).delete()
        for version, pod in zip(_versions(len(doomed)), doomed, strict=True):
            pod.resource_version = version
        history.record_many(_kind(), doomed, history.DELETED)
    return len(doomed)
