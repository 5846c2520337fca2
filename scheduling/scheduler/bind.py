"""Bind: compare-and-set, so no Run is bound twice and no pod goes over capacity.

Each batch runs in one transaction that locks the target pod rows (in pk order, so two
schedulers cannot deadlock) and re-reads what is already active on them. The Runs that still
fit are then bound by ONE UPDATE (over a JSON array of rows: one parameter, cheap to send)
that matches a Run only if it is still Pending at the resourceVersion the snapshot saw; a Run
the UPDATE does not return lost a race. The UPDATE is the Run status writer's
(``scheduling.run_status.write_many``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from scheduling import resources, run_status
from scheduling.models import PodPhase, Run, RunPhase, RuntimePod

from .snapshot import PendingRun, PodState
from .usage import active_usage


@dataclass
class BindResult:
    bound: list[tuple[PendingRun, PodState]] = field(default_factory=list)
    conflicts: list[tuple[PendingRun, PodState, str]] = field(default_factory=list)
    # What the database says each locked pod runs now (pod uid -> requests in use).
    usage: dict[str, dict[str, int]] = field(default_factory=dict)


def _fits(used: dict[str, int], requests: dict[str, int], capacity: dict[str, int]) -> bool:
    return all(
        name in capacity and used.get(name, 0) + amount <= capacity[name]
        for name, amount in requests.items()
    )


def _active_usage(pods: list[RuntimePod]) -> dict[str, dict[str, int]]:
    # assigned_pod is the indexed column; the uid makes the match exact (names are reused)
    runs = Run.objects.filter(
        assigned_pod__in={pod.name for pod in pods},
        assigned_pod_uid__in=[str(pod.uid) for pod in pods],
    )
    return {uid: used for (uid,), used in active_usage(runs, "assigned_pod_uid").items()}


def compare_and_set(accepted: list[tuple[PendingRun, PodState]], now: datetime) -> set[int]:
    """Bind every Run still Pending at its snapshot resourceVersion (the Run status writer's
    batch write with the BIND guard); the pks that were bound."""
    return run_status.write_many(
        (
            (run, run_status.scheduled(run.status, pod.name, pod.uid, now, run.generation))
            for run, pod in accepted
        ),
        run_status.BIND,
    )


def _still_pending(runs: list[PendingRun]) -> set[int]:
    """The Runs still Pending at the resourceVersion the snapshot saw, so one that already lost
    a race is not counted against capacity (the UPDATE re-checks: this only saves conflicts)."""
    current = dict(
        Run.objects.filter(
            pk__in=[run.pk for run in runs], phase=RunPhase.PENDING, deletion_timestamp__isnull=True
        ).values_list("pk", "resource_version")
    )
    return {run.pk for run in runs if current.get(run.pk) == run.resource_version}


def _admit(
    runs: list[PendingRun],
    pod: PodState,
    row: RuntimePod | None,
    pending: set[int],
    result: BindResult,
) -> list[tuple[PendingRun, PodState]]:
    """The Runs that still fit the locked pod (counted in ``result.usage``); the rest conflict."""
    if row is None or str(row.uid) != pod.uid or not row.ready or row.phase != PodPhase.RUNNING:
        result.conflicts += [(run, pod, "pod") for run in runs]
        return []
    used = result.usage.setdefault(pod.uid, {})
    admitted = []
    for run in runs:
        if not _fits(used, run.requests, row.capacity or {}):
            result.conflicts.append((run, pod, "capacity"))
        elif run.pk not in pending:
            result.conflicts.append((run, pod, "run"))
        else:
            resources.add(used, run.requests)
            admitted.append((run, pod))
    return admitted


def bind(assignments: list[tuple[PendingRun, PodState]], now: datetime) -> BindResult:
    result = BindResult()
    by_pod: dict[int, list[PendingRun]] = {}
    pods: dict[int, PodState] = {}
    for run, pod in assignments:
        by_pod.setdefault(pod.pk, []).append(run)
        pods[pod.pk] = pod
    with transaction.atomic():
        locked = {
            row.pk: row
            for row in RuntimePod.objects.select_for_update()
            .filter(pk__in=sorted(by_pod))
            .order_by("pk")
            .only("pk", "uid", "name", "ready", "phase", "capacity")
        }
        result.usage = _active_usage(list(locked.values()))
        pending = _still_pending([run for run, _ in assignments])
        accepted = [
            pair
            for pk, runs in by_pod.items()
            for pair in _admit(runs, pods[pk], locked.get(pk), pending, result)
        ]
        bound = compare_and_set(accepted, now)
        for run, pod in accepted:
            if run.pk in bound:
                result.bound.append((run, pod))
            else:  # changed after _still_pending read it: counted, but not bound
                result.conflicts.append((run, pod, "run"))
                resources.add(result.usage[pod.uid], run.requests, sign=-1)
    return result
