"""The Events of a WorkflowRun's life (``kubectl describe wfr``, ``kubectl events``, the
console): Started when the controller first runs it; each job's and each step's end
(JobSucceeded / JobFailed / JobSkipped, StepSucceeded / StepFailed) with why; the run's own end
(Succeeded, Failed, Cancelled).

Computed from the status before and after a pass, so a pass that changes nothing records
nothing and a pass undone (its status write lost a race) records nothing either: they are
written once the pass's transaction commits. Messages are composed here from names, phases and
the controller's own reasons: never from a step's script or a Run's free text.
"""

from __future__ import annotations

from typing import Any

from portal import event_writer, events_recorder
from portal.events_recorder import NORMAL, WARNING
from portal.machinery.registry import registry

from .models import (
    CARRIED_REASON,
    FINISHED_RUN_PHASES,
    JobPhase,
    StepPhase,
    WorkflowRun,
    WorkflowRunPhase,
)

Item = tuple[Any, str, str, str]
JOB_ENDS = {
    JobPhase.SUCCEEDED: ("JobSucceeded", NORMAL),
    JobPhase.FAILED: ("JobFailed", WARNING),
    JobPhase.SKIPPED: ("JobSkipped", NORMAL),
}
STEP_ENDS = {
    StepPhase.SUCCEEDED: ("StepSucceeded", NORMAL),
    StepPhase.FAILED: ("StepFailed", WARNING),
}
RUN_ENDS = {
    WorkflowRunPhase.SUCCEEDED: NORMAL,
    WorkflowRunPhase.FAILED: WARNING,
    WorkflowRunPhase.CANCELLED: NORMAL,
}


def _steps(job: dict) -> dict[str, dict]:
    return {s.get("name", ""): s for s in job.get("steps") or [] if isinstance(s, dict)}


def _step_items(wfr: WorkflowRun, name: str, before: dict, after: dict) -> list[Item]:
    items = []
    old = _steps(before)
    for step, state in _steps(after).items():
        phase = state.get("phase")
        if phase not in STEP_ENDS or (old.get(step) or {}).get("phase") == phase:
            continue
        reason, type_ = STEP_ENDS[phase]
        run = state.get("runName") or ""
        via = f" (Run {run})" if run else ""
        verb = "succeeded" if phase == StepPhase.SUCCEEDED else "failed"
        items.append((wfr, reason, f"step {step} of job {name} {verb}{via}", type_))
    return items


def _job_message(name: str, job: dict) -> str:
    phase = job.get("phase")
    if phase == JobPhase.SUCCEEDED:
        if job.get("reason") == CARRIED_REASON:
            return f"job {name} {job.get('message') or 'carried over'}"
        return f"job {name} succeeded"
    if phase == JobPhase.SKIPPED:
        return f"job {name} was skipped: {job.get('message') or 'it did not start'}"
    failed = next((s for s in job.get("steps") or [] if s.get("phase") == StepPhase.FAILED), None)
    why = job.get("reason") or (f"step {failed.get('name')} failed" if failed else "failed")
    return f"job {name} failed: {why}"


def transitions(wfr: WorkflowRun, before: dict, after: dict) -> list[Item]:
    """The Events of the change from status ``before`` to ``after``, in the order they
    happened (started, steps, jobs, the end)."""
    items: list[Item] = []
    phase = after.get("phase")
    was_pending = before.get("phase") in (None, "", WorkflowRunPhase.PENDING)
    if was_pending and phase and phase != WorkflowRunPhase.PENDING:
        items.append((wfr, "Started", "the workflow controller started the run", NORMAL))
    old_jobs = before.get("jobs") or {}
    for name, job in (after.get("jobs") or {}).items():
        old = old_jobs.get(name) or {}
        if job.get("reason") != CARRIED_REASON:  # its steps ran in the old run
            items += _step_items(wfr, name, old, job)
        if job.get("phase") in JOB_ENDS and old.get("phase") != job.get("phase"):
            reason, type_ = JOB_ENDS[job["phase"]]
            items.append((wfr, reason, _job_message(name, job), type_))
    if phase in FINISHED_RUN_PHASES and before.get("phase") != phase:
        jobs = after.get("jobs") or {}
        done = sum(1 for j in jobs.values() if j.get("phase") == JobPhase.SUCCEEDED)
        message = f"{done} of {len(jobs)} jobs succeeded"
        if phase == WorkflowRunPhase.CANCELLED:
            message = f"cancelled: {message}"
        items.append((wfr, str(phase), message, RUN_ENDS[phase]))
    return items


def record(wfr: WorkflowRun, before: dict, after: dict) -> int:
    """Have the Events of this pass written once its transaction commits; how many."""
    items = transitions(wfr, before, after)
    if items:
        kind = registry.for_model(WorkflowRun)
        event_writer.writer.submit_on_commit(items, kind, events_recorder.COMPONENT)
    return len(items)
