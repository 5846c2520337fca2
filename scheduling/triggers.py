"""Wake the scheduler: its work queue (``portal.machinery.workqueue``, queue ``scheduler``)
holds one key, the pending queue as a whole, as kube-scheduler has one scheduling queue: any
number of wake-ups while a pass waits or runs merge into one more pass, and one worker runs
passes at a time. The Run, Runtime and RuntimePod kinds' watchers add it; so do capacity
freed, a workspace released, and beat (the resync)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from portal.machinery import workqueue
from scheduling import metrics
from scheduling.models import ACTIVE_PHASES

log = logging.getLogger(__name__)

QUEUE = "scheduler"
KEY = "pending"  # the one key: every Pending Run, placed in priority order by one pass
# a pass takes well under a second: a worker killed mid-pass holds scheduling back this long
PASS_LEASE = timedelta(seconds=60)
SOURCES = ("run", "pod", "runtime", "workspace", "beat", "retry")


def request_scheduling(source: str, eta: datetime | None = None) -> None:
    """A scheduling pass after the commit, or at ``eta`` (a retry's backoff end)."""
    if source not in SOURCES:
        raise ValueError(f"unknown wake-up source {source!r}")
    metrics.WAKEUPS.labels(source).inc()
    after = 0.0 if eta is None else max(0.0, (eta - timezone.now()).total_seconds())
    workqueue.add(QUEUE, KEY, after=after)


def on_run_change(run, event: str) -> None:
    """The scheduler watches Runs: new ones, Pending ones whose spec, labels, cancel or
    deletion moved (not its own status writes), bound ones to stop, deleted ones (when
    deleted, and when a deleted one ends)."""
    if event == "ADDED" or (event == "MODIFIED" and run.phase == "Pending" and run.desired_changed):
        request_scheduling("run")
    if (
        event == "MODIFIED"
        and run.is_stopping
        and run.phase in ACTIVE_PHASES
        and run.desired_changed  # a cancel or a delete just asked for
    ):
        transaction.on_commit(lambda: _send_cancel(run.pk))
    if (
        event == "MODIFIED"
        and run.deletion_timestamp is not None
        and (run.desired_changed or (run.phase_changed and run.is_terminal))
    ):
        request_cleanup(run)  # deleted, or a deleted Run ended: its artifacts go now


def on_runtime_change(runtime, event: str) -> None:
    """Runtime kind hook: Runs waiting for a Runtime that did not exist (or no longer does)
    get a pass now, not at the next beat, so their Pending message says what is true."""
    if event in ("ADDED", "DELETED"):
        request_scheduling("runtime")


def on_pod_change(pod, event: str) -> None:
    """RuntimePod kind hook: a pod that is ready after its change (it became ready, or its
    capacity, labels or names moved) may take Runs now. A pod leaving or no longer ready frees
    nothing: the Runs waiting stay so until beat's pass words why."""
    if event != "DELETED" and pod.ready:
        request_scheduling("pod")


CLEANUP_QUEUE = "run-cleanup"  # key: namespace/name of a deleted Run


def request_cleanup(run) -> None:
    """Have a deleted Run's artifacts deleted and its finalizer released (once it has ended);
    beat's TTL and cleanup pass finds any it missed."""
    workqueue.add(CLEANUP_QUEUE, f"{run.namespace}/{run.name}")


def _send_cancel(pk: int) -> None:
    from scheduling import dispatch

    try:
        dispatch.send_cancels([pk], timezone.now())
    except Exception:  # noqa: BLE001 - the beat pass re-sends; the write already committed
        log.warning("could not send a cancel; the beat pass will", exc_info=True)
