"""The one status writer of the WorkflowRun kind: conditions and the compare-and-set.

``write`` lands the status the controller computed at the resourceVersion it read (a stale
write loses; the next reconcile computes again). A run that finishes and was called by another
WorkflowRun (a reusable-workflow job) wakes its caller.
"""

from __future__ import annotations

from datetime import datetime

from portal.machinery.conditions import set_condition

from .models import WorkflowRun, WorkflowRunPhase
from .names import UID_LABEL

MESSAGE_LIMIT = 4096


def with_conditions(status: dict, wfr: WorkflowRun, now: datetime) -> dict:
    """Accepted once the controller took the run; Completed once it finished."""
    conditions = set_condition(
        status.get("conditions"),
        type="Accepted",
        status="True",
        reason="Started",
        message="the workflow controller runs this WorkflowRun",
        observed_generation=wfr.generation,
        now=now,
    )
    finished = status.get("phase") in (
        WorkflowRunPhase.SUCCEEDED,
        WorkflowRunPhase.FAILED,
        WorkflowRunPhase.CANCELLED,
    )
    conditions = set_condition(
        conditions,
        type="Completed",
        status="True" if finished else "False",
        reason=status.get("phase") or WorkflowRunPhase.PENDING,
        message=(status.get("message") or "")[:MESSAGE_LIMIT],
        observed_generation=wfr.generation,
        now=now,
    )
    return {**status, "conditions": conditions, "observedGeneration": wfr.generation}


def write(wfr: WorkflowRun, status: dict) -> bool:
    if status == (wfr.status or {}):
        return False
    status = {**status, "message": (status.get("message") or "")[:MESSAGE_LIMIT]}
    columns = WorkflowRun.status_columns(status)
    won = WorkflowRun.objects.filter(pk=wfr.pk, resource_version=wfr.resource_version).update(
        status=status, resource_version=wfr.resource_version + 1, **columns
    )
    if not won:
        return False
    before = wfr.phase
    wfr.status, wfr.resource_version, wfr.phase = status, wfr.resource_version + 1, columns["phase"]
    parent = (wfr.labels or {}).get(UID_LABEL)
    if parent and wfr.phase != before and wfr.is_finished:
        from .triggers import request_reconcile

        request_reconcile(uid=parent)
    return True
