"""Bind: compare-and-set, so no Run is bound twice and no pod goes over capacity.

Each batch runs in one transaction that locks the target pod rows (in pk order, so two
schedulers cannot deadlock) and re-reads what is already active on them (those the
scheduler's ledger cannot vouch for, below). The Runs that still
fit are then bound by ONE UPDATE (over a JSON array of rows: one parameter, cheap to send)
that matches a Run only if it is still Pending at the resourceVersion the snapshot saw; a Run
the UPDATE does not return lost a race. The UPDATE is the Run status writer's
(``scheduling.run_status.write_many``). Which Runs are still Pending is read first only for
Runs that share their pod with others of the batch (a Run that lost its race would otherwise
take capacity from them); a Run alone on its pod is left to the UPDATE.

Only a bind makes a pod busier (every other change to an active Run ends it or keeps it on its
pod), and every bind transaction first takes the next ``BindEpoch`` value, holding that row
until it commits. A scheduler keeps, in its ``PodLedger``, the usage its own binds left on each
pod and the epoch of its last bind, from one pass to the next: a batch whose epoch is the next
one knows no one else bound anywhere since, so it takes the usage of the pods it already saw
from the ledger and reads only new pods' Runs; any other epoch (another scheduler bound
meanwhile) and every pod is read again. Runs that ended since make the ledger too high, never
too low: when it says a batch does not fit a pod, what the pod runs is read instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from portal.machinery import counter_row
from scheduling import resources, run_status
from scheduling.models import BindEpoch, PodPhase, Run, RunPhase, RuntimePod

from .pod_rows import read_pods
from .snapshot import PendingRun, PodState
from .usage import active_usage


@dataclass
class BindResult:
    bound: list[tuple[PendingRun, PodState]] = field(default_factory=list)
    conflicts: list[tuple[PendingRun, PodState, str]] = field(default_factory=list)
    # What the database says each locked pod runs now (pod uid -> requests in use).
    usage: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class PodLedger:
    """What a scheduler's binds left on each pod: pod pk -> (pod uid, requests in use), as of
    ``epoch``, the BindEpoch of its last bind. Runs that end meanwhile make it too high,
    never too low."""

    epoch: int | None = None
    pods: dict[int, tuple[str, dict[str, int]]] = field(default_factory=dict)

    def usage(self, row: PodState) -> dict[str, int] | None:
        """The pod's usage as this pass left it; None when it must be read."""
        seen = self.pods.get(row.pk)
        if seen is None or seen[0] != row.uid:
            return None  # not seen by this pass, or replaced since
        return dict(seen[1])


def _lock_pods(pks: list[int]) -> dict[int, PodState]:
    """Lock the pod rows, in pk order (two binders never wait on each other in a cycle), and
    read them as a pass reads pods."""
    locked = RuntimePod.objects.select_for_update().filter(pk__in=sorted(pks)).order_by("pk")
    return {pod.pk: pod for pod in read_pods(locked)}


def _next_epoch() -> int:
    """Take the next BindEpoch (the row stays locked until the bind commits)."""
    return counter_row.increment(BindEpoch)


def _fits(used: dict[str, int], requests: dict[str, int], capacity: dict[str, int]) -> bool:
    return all(
        name in capacity and used.get(name, 0) + amount <= capacity[name]
        for name, amount in requests.items()
    )


def _active_usage(pods: list[PodState]) -> dict[str, dict[str, int]]:
    # assigned_pod is the indexed column; the uid makes the match exact (names are reused)
    runs = Run.objects.filter(
        assigned_pod__in={pod.name for pod in pods},
        assigned_pod_uid__in=[pod.uid for pod in pods],
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


def _still_pending(by_pod: dict[int, list[PendingRun]]) -> set[int]:
    """The Runs still Pending at the resourceVersion the snapshot saw, so one that already lost
    a race is not counted against capacity (the UPDATE re-checks: this only saves conflicts).
    Only a Run sharing its pod with others of the batch can take capacity from them: a Run
    alone on its pod is left to the UPDATE."""
    shared = [run for runs in by_pod.values() if len(runs) > 1 for run in runs]
    alone = {runs[0].pk for runs in by_pod.values() if len(runs) == 1}
    if not shared:
        return alone
    current = dict(
        Run.objects.filter(
            pk__in=[run.pk for run in shared],
            phase=RunPhase.PENDING,
            deletion_timestamp__isnull=True,
        ).values_list("pk", "resource_version")
    )
    return alone | {run.pk for run in shared if current.get(run.pk) == run.resource_version}


def _all_fit(used: dict[str, int], runs: list[PendingRun], capacity: dict[str, int]) -> bool:
    """Whether every Run fits the pod together with the others (as ``_admit`` would take them)."""
    together: dict[str, int] = {}
    for run in runs:
        resources.add(together, run.requests)
    return _fits(used, together, capacity)


def _admit(
    runs: list[PendingRun],
    pod: PodState,
    row: PodState | None,
    pending: set[int],
    result: BindResult,
) -> list[tuple[PendingRun, PodState]]:
    """The Runs that still fit the locked pod (counted in ``result.usage``); the rest conflict."""
    if row is None or row.uid != pod.uid or not row.ready or row.phase != PodPhase.RUNNING:
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


def bind(
    assignments: list[tuple[PendingRun, PodState]],
    now: datetime,
    ledger: PodLedger | None = None,
) -> BindResult:
    result = BindResult()
    by_pod: dict[int, list[PendingRun]] = {}
    pods: dict[int, PodState] = {}
    for run, pod in assignments:
        by_pod.setdefault(pod.pk, []).append(run)
        pods[pod.pk] = pod
    with transaction.atomic():
        epoch = _next_epoch()  # first: binds are serialised from here to the commit
        if ledger is not None and ledger.epoch != epoch - 1:
            ledger.pods.clear()  # someone else bound since this pass's last batch
        locked = _lock_pods(list(by_pod))
        known = {}
        for row in locked.values():
            usage = ledger.usage(row) if ledger is not None else None
            # the ledger may count Runs that ended since: when it says they do not all fit,
            # what the pod runs now is read instead
            if usage is not None and _all_fit(usage, by_pod[row.pk], row.capacity):
                known[row.uid] = usage
        unknown = [row for row in locked.values() if row.uid not in known]
        result.usage = {**(_active_usage(unknown) if unknown else {}), **known}
        pending = _still_pending(by_pod)
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
    if ledger is not None:  # committed: what this batch leaves on each pod it locked
        ledger.epoch = epoch
        for pk, row in locked.items():
            ledger.pods[pk] = (row.uid, dict(result.usage.get(row.uid, {})))
    return result
