"""Reading the snapshot and the queue from the database: a few bounded queries per pass.

Pod usage is summed in SQL (about one row per pod). Placed Runs' labels are read only for
namespaces whose affinity a pass asks about, grouped by (pod, labels); the first few
selectors of a pass are answered by one COUNT query each instead, which is cheaper when a
pass places few Runs with affinity (the usual case once a backlog is bound).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.fields.json import KeyTransform

from portal.machinery.label_query import selector_q
from portal.machinery.labels import Selector
from scheduling import resources
from scheduling.models import ACTIVE_PHASES, Run, RunPhase, Runtime, RuntimePod
from workspaces.models import PersistentWorkspace

from .parking import Parking
from .pod_cache import PodCache
from .pod_rows import read_pods, signature
from .snapshot import (
    PendingRun,
    PlacedRun,
    PodState,
    Snapshot,
    WorkspaceKey,
    WorkspaceState,
)
from .usage import active_usage, run_requests
from .usage_cache import UsageCache

SQL_SELECTORS_PER_PASS = 16
# Where a page of the queue ended: (priority, creation_timestamp, pk) of its last Run.
Cursor = tuple[int, datetime | None, int]


class DatabasePlacements:
    """The snapshot's ``PlacedSource``: active Runs per namespace, read when first needed."""

    def __init__(self, sql_selectors: int) -> None:
        self.sql_selectors = sql_selectors

    def placed(self, namespace: str) -> list[PlacedRun]:
        rows = (
            Run.objects.filter(namespace=namespace, phase__in=ACTIVE_PHASES)
            .values_list("assigned_pod", "labels")
            .annotate(n=Count("id"))
            .order_by()
        )
        return [
            PlacedRun("", labels or {}, pod_name, count=count) for pod_name, labels, count in rows
        ]

    def targets(self, namespace: str, selector: Selector) -> Counter[str] | None:
        if selector.match_nothing:
            return Counter()
        if self.sql_selectors <= 0:
            return None  # this pass asks many: reading the namespace once is cheaper
        self.sql_selectors -= 1
        rows = (
            Run.objects.filter(selector_q(selector), namespace=namespace, phase__in=ACTIVE_PHASES)
            .values_list("assigned_pod")
            .annotate(n=Count("id"))
            .order_by()
        )
        return Counter(dict(rows))


def take_snapshot(
    now: datetime,
    sql_selectors: int = SQL_SELECTORS_PER_PASS,
    cache: UsageCache | None = None,
    pods: PodCache | None = None,
) -> Snapshot:
    """The pods, what active Runs use on each and the Runtimes (read when a Run's Runtime has
    no pods). With the scheduler's caches (``cache``: usage; ``pods``: the pods, which needs
    ``cache``) only what changed since the last pass is read."""
    if cache is not None and pods is not None:
        cache.current()
        index = pods.refresh(now, cache)
        snapshot = _from_database(now, sql_selectors, [], index=index, stale=pods.stale)
        pods.touched = snapshot.touched
        snapshot.pod_signature = pods.signature()
        return snapshot
    rows = read_pods(RuntimePod.objects.all())
    by_key = {(pod.namespace, pod.name): pod for pod in rows}
    usage = (
        cache.current()
        if cache is not None
        else active_usage(Run.objects.all(), "namespace", "assigned_pod", "assigned_pod_uid")
    )
    for (namespace, pod_name, pod_uid), used in usage.items():
        pod = by_key.get((namespace, pod_name))
        if pod is not None and pod.uid == pod_uid:
            resources.add(pod.used, used)
    snapshot = _from_database(now, sql_selectors, rows)
    snapshot.pod_signature = signature(rows, snapshot.stale)
    return snapshot


def _from_database(
    now: datetime, sql_selectors: int, pods: list[PodState], **index: Any
) -> Snapshot:
    """A snapshot whose placed Runs, workspaces and Runtimes are read when a Run needs them."""
    return Snapshot(
        now,
        pods,
        {},
        source=DatabasePlacements(sql_selectors),
        runtimes=_runtimes,
        workspaces=DatabaseWorkspaces(),
        **index,
    )


def _runtimes() -> set[tuple[str, str]]:
    return set(Runtime.objects.values_list("namespace", "name"))


class DatabaseWorkspaces:
    """The PersistentWorkspaces a page of Runs references, one query per namespace."""

    def workspaces(self, keys: set[WorkspaceKey]) -> dict[WorkspaceKey, WorkspaceState]:
        by_namespace: dict[str, set[str]] = {}
        for namespace, name in keys:
            by_namespace.setdefault(namespace, set()).add(name)
        query = Q()
        for namespace, names in by_namespace.items():
            query |= Q(namespace=namespace, name__in=sorted(names))
        rows = PersistentWorkspace.objects.filter(query).values(
            "namespace",
            "name",
            "runtime",
            "phase",
            "bound_pod",
            "bound_pod_uid",
            "deletion_timestamp",
        )
        return {
            (row["namespace"], row["name"]): WorkspaceState(
                runtime=row["runtime"],
                phase=row["phase"],
                bound_pod=row["bound_pod"],
                bound_pod_uid=row["bound_pod_uid"],
                deleting=row["deletion_timestamp"] is not None,
            )
            for row in rows
        }


def _queue(after: Cursor | None, now: datetime | None) -> QuerySet[Run]:
    """The pending Runs after ``after``, in queue order.

    A retried Run waiting out its backoff is left out until ``now`` passes it (a cancelled
    one is not: cancelling a Pending Run ends it at once).
    """
    ready = (
        Q()
        if now is None
        else (Q(not_before__isnull=True) | Q(not_before__lte=now) | Q(cancel_requested=True))
    )
    return Run.objects.filter(
        after_cursor(after), ready, phase=RunPhase.PENDING, deletion_timestamp__isnull=True
    ).order_by("-priority", "creation_timestamp", "pk")


def pending_runs(
    limit: int, after: Cursor | None = None, *, now: datetime | None = None
) -> list[PendingRun]:
    """The queue, in priority then creation order; spec is read only for its affinity."""
    return _pending(_queue(after, now)[:limit])


@dataclass
class Page:
    runs: list[PendingRun]  # to schedule, in queue order
    seen: int  # Runs the page covered, skipped ones included
    last: Cursor | None  # where it ended
    skipped: int = 0  # parked Runs left as they were


def pending_page(
    limit: int, after: Cursor | None, *, now: datetime, parking: Parking | None = None
) -> Page:
    """A page of the queue. With Runs parked (see ``parking``) only its keys are read first,
    then the whole rows of the Runs not parked at their current version."""
    query = _queue(after, now)
    if parking is None or not len(parking):
        runs = _pending(query[:limit])
        last = runs[-1] if runs else None
        cursor = None if last is None else _cursor(last.priority, last.creation_timestamp, last.pk)
        return Page(runs, len(runs), cursor)
    keys = list(
        query.values_list("pk", "resource_version", "priority", "creation_timestamp")[:limit]
    )
    wanted = [pk for pk, version, *_ in keys if not parking.parked(pk, version)]
    runs = _pending(query.filter(pk__in=wanted)) if wanted else []
    cursor = None if not keys else _cursor(keys[-1][2], keys[-1][3], keys[-1][0])
    return Page(runs, len(keys), cursor, skipped=len(keys) - len(wanted))


def _cursor(priority: int, created: datetime | None, pk: int) -> Cursor:
    """Where a page ends: its last Run's place in queue order (see ``after_cursor``)."""
    return (priority, created, pk)


def _pending(query: QuerySet[Run]) -> list[PendingRun]:
    rows = query.values(
        "pk",
        "uid",
        "namespace",
        "name",
        "resource_version",
        "generation",
        "labels",
        "runtime",
        "requests",
        "status",
        "cancel_requested",
        "priority",
        "creation_timestamp",
        "workspace",
        affinity=KeyTransform("affinity", "spec"),
    )
    runs = []
    for row in rows:
        requests, fractional = run_requests(row["requests"])
        runs.append(
            PendingRun(
                pk=row["pk"],
                uid=str(row["uid"]),
                namespace=row["namespace"],
                name=row["name"],
                resource_version=row["resource_version"],
                generation=row["generation"],
                labels=row["labels"] or {},
                runtime=row["runtime"],
                requests=requests,
                fractional=fractional,
                affinity=row["affinity"] or {},
                status=row["status"] or {},
                cancel_requested=row["cancel_requested"],
                priority=row["priority"],
                creation_timestamp=row["creation_timestamp"],
                workspace=row["workspace"],
            )
        )
    return runs


def after_cursor(after: Cursor | None) -> Q:
    """Keyset paging in queue order: (-priority, creation_timestamp, pk)."""
    if after is None:
        return Q()
    priority, created, pk = after
    return (
        Q(priority__lt=priority)
        | Q(priority=priority, creation_timestamp__gt=created)
        | Q(priority=priority, creation_timestamp=created, pk__gt=pk)
    )
