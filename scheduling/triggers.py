"""Wake the scheduler after a commit that may make a pending Run placeable."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from portal.machinery.events import send_on_commit
from scheduling import metrics, task_names
from scheduling.models import ACTIVE_PHASES
from scheduling.signals import run_phase_changed

log = logging.getLogger(__name__)

SOURCES = ("run", "pod", "runtime", "workspace", "beat", "retry")


def request_scheduling(source: str, eta: datetime | None = None) -> None:
    """Wake the scheduler after the commit, or at ``eta`` (a retry's backoff end)."""
    if source not in SOURCES:
        raise ValueError(f"unknown wake-up source {source!r}")
    metrics.WAKEUPS.labels(source).inc()
    if eta is None:
        send_on_commit(task_names.SCHEDULE, source)
    else:
        send_on_commit(task_names.SCHEDULE, source, eta=eta)


def on_run_change(run, event: str) -> None:
    """Run kind hook: new or cancelled pending Runs, bound ones to stop, deleted ones, and a
    phase moved by a write through the store (a /status write: the same Events and wake-ups
    as the status writer's)."""
    if event == "MODIFIED" and run.phase_changed:
        run._phase_read = run.phase  # announced once
        run_phase_changed.send(sender=None, run=run, phase=run.phase)
    if event == "ADDED" or (event == "MODIFIED" and run.phase == "Pending"):
        request_scheduling("run")
    if event == "MODIFIED" and run.is_stopping and run.phase in ACTIVE_PHASES:
        transaction.on_commit(lambda: _send_cancel(run.pk))
    if event == "MODIFIED" and run.deletion_timestamp is not None:
        request_cleanup()


def on_runtime_change(runtime, event: str) -> None:
    """Runtime kind hook: Runs waiting for a Runtime that did not exist (or no longer does)
    get a pass now, not at the next beat, so their Pending message says what is true."""
    if event in ("ADDED", "DELETED"):
        request_scheduling("runtime")


def request_cleanup() -> None:
    """Run the TTL/artifact-cleanup pass after the commit (beat runs it anyway)."""
    send_on_commit(task_names.COLLECT_RUNS)


def _send_cancel(pk: int) -> None:
    from scheduling import dispatch

    try:
        dispatch.send_cancels([pk], timezone.now())
    except Exception:  # noqa: BLE001 - the beat pass re-sends; the write already committed
        log.warning("could not send a cancel; the beat pass will", exc_info=True)
