"""Bind: compare-and-set, so no Run is bound twice and no pod goes over capacity.

Each batch runs in one transaction that locks the target pod rows (in pk order, so two
schedulers cannot deadlock), re-reads what is already active on them, and binds a Run only
if it is still Pending at the resourceVersion the snapshot saw and still fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from scheduling import resources, run_status
from scheduling.models import ACTIVE_PHASES, Run, RunPhase, RuntimePod

from .snapshot import PendingRun, PodState


@dataclass
class BindResult:
    bound: list[tuple[PendingRun, PodState]] = field(default_factory=list)
    conflicts: list[tuple[PendingRun, PodState, str]] = field(default_factory=list)
    # What the database says each locked pod runs now (pod uid -> requests in use).
    usage: dict[str, dict[str, int]] = field(default_factory=dict)


def _fits(used: dict[str, int], requests: dict[str, int], capacity: dict[str, int]) -> bool:
    return all(name in capacity and used.get(name, 0) + amount <= capacity[name]
               for name, amount in requests.items())


def _active_usage(pod_uids: list[str]) -> dict[str, dict[str, int]]:
    usage: dict[str, dict[str, int]] = {}
    rows = Run.objects.filter(phase__in=ACTIVE_PHASES, assigned_pod_uid__in=pod_uids)
    for pod_uid, requests in rows.values_list("assigned_pod_uid", "requests"):
        counted, _ = resources.run_requests({"resources": {"requests": requests}})
        resources.add(usage.setdefault(pod_uid, {}), counted)
    return usage


def _bind_one(run: PendingRun, pod: PodState, now: datetime) -> bool:
    status = run_status.scheduled(run.status, pod.name, pod.uid, now, run.generation)
    return bool(
        Run.objects.filter(pk=run.pk, resource_version=run.resource_version,
                           phase=RunPhase.PENDING, deletion_timestamp__isnull=True)
        .update(status=status, resource_version=run.resource_version + 1, dispatched_at=None,
                **Run.status_columns(status)))


def bind(assignments: list[tuple[PendingRun, PodState]], now: datetime) -> BindResult:
    result = BindResult()
    by_pod: dict[int, list[PendingRun]] = {}
    pods: dict[int, PodState] = {}
    for run, pod in assignments:
        by_pod.setdefault(pod.pk, []).append(run)
        pods[pod.pk] = pod
    with transaction.atomic():
        locked = {row.pk: row for row in RuntimePod.objects.select_for_update()
                  .filter(pk__in=sorted(by_pod)).order_by("pk").only("pk", "uid", "ready",
                                                                       "phase", "capacity")}
        usage = _active_usage([str(row.uid) for row in locked.values()])
        for pk, runs in by_pod.items():
            pod, row = pods[pk], locked.get(pk)
            if row is None or str(row.uid) != pod.uid or not row.ready or row.phase != "Running":
                result.conflicts += [(run, pod, "pod") for run in runs]
                continue
            used = usage.setdefault(pod.uid, {})
            for run in runs:
                if not _fits(used, run.requests, row.capacity or {}):
                    result.conflicts.append((run, pod, "capacity"))
                elif _bind_one(run, pod, now):
                    resources.add(used, run.requests)
                    result.bound.append((run, pod))
                else:
                    result.conflicts.append((run, pod, "run"))
        result.usage = usage
    return result
