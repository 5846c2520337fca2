"""Reading the snapshot and the queue from the database: a few bounded queries per pass."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from scheduling import resources
from scheduling.models import ACTIVE_PHASES, Run, RunPhase, RuntimePod

from .snapshot import PendingRun, PlacedRun, PodState, Snapshot


def take_snapshot(now: datetime) -> Snapshot:
    pods = [
        PodState(namespace=row["namespace"], runtime=row["runtime"], name=row["name"],
                 uid=str(row["uid"]), pk=row["pk"], ready=row["ready"], phase=row["phase"],
                 last_heartbeat=row["last_heartbeat"], capacity=dict(row["capacity"] or {}))
        for row in RuntimePod.objects.values("pk", "namespace", "runtime", "name", "uid",
                                             "ready", "phase", "last_heartbeat", "capacity")
    ]
    by_key = {(pod.namespace, pod.name): pod for pod in pods}
    placed: dict[str, list[PlacedRun]] = {}
    active = Run.objects.filter(phase__in=ACTIVE_PHASES).values_list(
        "uid", "namespace", "labels", "assigned_pod", "assigned_pod_uid", "requests")
    for uid, namespace, labels, pod_name, pod_uid, requests in active.iterator(chunk_size=2000):
        placed.setdefault(namespace, []).append(PlacedRun(str(uid), labels or {}, pod_name))
        pod = by_key.get((namespace, pod_name))
        if pod is not None and pod.uid == pod_uid:
            counted, _ = resources.run_requests({"resources": {"requests": requests}})
            resources.add(pod.used, counted)
    return Snapshot(now, pods, placed)


def pending_runs(limit: int, after: tuple | None = None) -> list[PendingRun]:
    """The queue, in priority then creation order; spec is read only for its affinity."""
    query = (Run.objects.filter(after_cursor(after), phase=RunPhase.PENDING,
                                deletion_timestamp__isnull=True)
             .order_by("-priority", "creation_timestamp", "pk"))
    rows = query.values("pk", "uid", "namespace", "name", "resource_version", "generation",
                        "labels", "runtime", "requests", "status", "cancel_requested",
                        "priority", "creation_timestamp",
                        affinity=KeyTransform("affinity", "spec"))[:limit]
    runs = []
    for row in rows:
        requests, fractional = resources.run_requests({"resources": {"requests": row["requests"]}})
        runs.append(PendingRun(
            pk=row["pk"], uid=str(row["uid"]), namespace=row["namespace"], name=row["name"],
            resource_version=row["resource_version"], generation=row["generation"],
            labels=row["labels"] or {}, runtime=row["runtime"], requests=requests,
            fractional=fractional, affinity=row["affinity"] or {}, status=row["status"] or {},
            cancel_requested=row["cancel_requested"], priority=row["priority"],
            creation_timestamp=row["creation_timestamp"]))
    return runs


def after_cursor(after: tuple | None) -> Q:
    """Keyset paging in queue order: (-priority, creation_timestamp, pk)."""
    if after is None:
        return Q()
    priority, created, pk = after
    return (Q(priority__lt=priority) | Q(priority=priority, creation_timestamp__gt=created)
            | Q(priority=priority, creation_timestamp=created, pk__gt=pk))
