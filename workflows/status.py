"""The one status writer of the WorkflowRun kind: conditions and the compare-and-set.

``write`` lands the status the controller computed at the resourceVersion it read (a stale
write loses; the next reconcile computes again). A run that finishes and was called by another
WorkflowRun (a reusable-workflow job) wakes its caller.
"""

from __future__ import annotations

from datetime import datetime

from portal.machinery import history
from portal.machinery.conditions import with_conditions

from .models import FINISHED_RUN_PHASES, WorkflowRun, WorkflowRunPhase
from .names import UID_LABEL

MESSAGE_LIMIT = 4096


def run_conditions(status: dict, wfr: WorkflowRun, now: datetime) -> dict:
    """Accepted once the controller took the run; Completed once it finished. While it runs,
    Completed's reason is that of the first job waiting for a reason (RuntimeNotFound), so
    ``kubectl describe`` and the console say why it does not move."""
    phase = status.get("phase") or WorkflowRunPhase.PENDING
    finished = phase in FINISHED_RUN_PHASES
    reason = phase
    if not finished:
        jobs = status.get("jobs") or {}
        reason = next(
            (j["reason"] for j in jobs.values() if j.get("phase") == "Waiting" and j.get("reason")),
            phase,
        )
    return with_conditions(
        status,
        now,
        wfr.generation,
        {
            "Accepted": ("True", "Started", "the workflow controller runs this WorkflowRun"),
            "Completed": (
                "True" if finished else "False",
                reason,
                (status.get("message") or "")[:MESSAGE_LIMIT],
            ),
        },
    )


def write(wfr: WorkflowRun, status: dict) -> bool:
    if status == (wfr.status or {}):
        return False
    status = {**status, "message": (status.get("message") or "")[:MESSAGE_LIMIT]}
    columns = WorkflowRun.status_columns(status)
    before = wfr.phase
    if not history.compare_and_set(wfr, {"status": status, **columns}):
        return False
    parent = (wfr.labels or {}).get(UID_LABEL)
    if parent and wfr.phase != before and wfr.is_finished:
        from .triggers import request_reconcile

        request_reconcile(parent)
    return True


def step_shown(job: dict, step: dict) -> tuple[str, str]:
    """(phase, why) to show for a step of a job's status: a step that never started in a job
    that is over was skipped (the status leaves it Pending, as kruntimes' StepPhase has no
    Skipped), and why is its job's story."""
    phase = str(step.get("phase") or "Pending")
    if phase != "Pending":
        return phase, ""
    job_phase = job.get("phase")
    if job_phase == "Failed":
        failed = any(
            s.get("phase") == "Failed" for s in job.get("steps") or [] if isinstance(s, dict)
        )
        return "Skipped", "an earlier step failed" if failed else str(job.get("message") or "")
    if job_phase in ("Skipped", "Succeeded"):
        return "Skipped", str(job.get("message") or "its job was skipped")
    return phase, ""
