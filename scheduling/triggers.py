"""Wake the scheduler after a commit that may make a pending Run placeable."""

from __future__ import annotations

from portal.machinery.events import send_on_commit
from scheduling import metrics

SOURCES = ("run", "pod", "workspace", "beat")


def request_scheduling(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"unknown wake-up source {source!r}")
    from scheduling import tasks

    metrics.WAKEUPS.labels(source).inc()
    send_on_commit(tasks.schedule, source)


def on_run_change(run, event: str) -> None:
    """Run kind hook: new or cancelled pending Runs, and finished ones that free capacity."""
    if event == "ADDED" or (event == "MODIFIED" and run.phase == "Pending"):
        request_scheduling("run")
