"""The Events of a Job's life: Scheduled (its execution was created), Started, Finished
(Normal when it succeeded, a Warning naming the reason when it failed) and ResultUnknown.
Messages come from the phase and the condition reason only, never the Job's parameters."""

from __future__ import annotations

from portal import events_recorder
from portal.events_recorder import NORMAL, WARNING
from portal.machinery.conditions import get_condition

from .models import Job, JobPhase


def phase_changed(job: Job, before: str, status: dict) -> None:
    phase = status.get("phase") or ""
    if phase == before:
        return
    condition = get_condition(status.get("conditions"), phase) or {}
    if phase == JobPhase.UNKNOWN:
        condition = get_condition(status.get("conditions"), "ResultUnknown") or {}
    reason = condition.get("reason") or phase
    if phase == JobPhase.SCHEDULED:
        events_recorder.record(job, "Scheduled", "the execution was created")
    elif phase == JobPhase.RUNNING:
        events_recorder.record(job, "Started", "the execution is running")
    elif phase == JobPhase.SUCCEEDED:
        events_recorder.record(job, "Finished", "the Job succeeded", type=NORMAL)
    elif phase == JobPhase.FAILED:
        events_recorder.record(job, "Finished", f"the Job failed ({reason})", type=WARNING)
    elif phase == JobPhase.UNKNOWN:
        events_recorder.record(
            job, "ResultUnknown", f"the execution cannot be observed ({reason})", type=WARNING
        )
