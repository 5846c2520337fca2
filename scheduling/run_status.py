"""Run status transitions as pure functions: the new status for each lifecycle event.

Conditions: Scheduled, Running, Ready (function mode), Completed; lastTransitionTime moves
only when a condition's status flips (``set_condition``).
"""

from __future__ import annotations

from datetime import datetime

from portal.machinery.conditions import format_time, set_condition
from runtimed.reporting import status_message
from scheduling.models import RunPhase

MESSAGE_LIMIT = 4096
ASSIGNED = "Assigned"  # the Scheduled condition's reason once the Run is bound


def _with(status: dict, now: datetime, generation: int, **conditions) -> dict:
    new = dict(status or {})
    current = list(new.get("conditions") or [])
    for ctype, (cstatus, reason, message) in conditions.items():
        current = set_condition(
            current,
            type=ctype,
            status=cstatus,
            reason=reason,
            message=status_message(message, MESSAGE_LIMIT),
            observed_generation=generation,
            now=now,
        )
    new["conditions"] = current
    new["observedGeneration"] = generation
    return new


def pending(status: dict, message: str, now: datetime, generation: int) -> dict:
    new = _with(status, now, generation, Scheduled=("False", "Unschedulable", message))
    new.update(phase=RunPhase.PENDING, message=status_message(message, MESSAGE_LIMIT))
    new.setdefault("attempt", 1)
    return new


def scheduled(status: dict, pod_name: str, pod_uid: str, now: datetime, generation: int) -> dict:
    new = _with(
        status, now, generation, Scheduled=("True", ASSIGNED, f"assigned to Runtime Pod {pod_name}")
    )
    new.update(phase=RunPhase.SCHEDULED, assignedPod=pod_name, assignedPodUID=pod_uid, message="")
    new.setdefault("attempt", 1)
    return new


def running(status: dict, start: str | None, now: datetime, generation: int) -> dict:
    new = _with(status, now, generation, Running=("True", "Running", "the step is running"))
    new.update(phase=RunPhase.RUNNING, startTime=start or format_time(now))
    return new


def _ran(status: dict | None) -> bool:
    # it ran if it was Running, or if the report says when it started (reports may overtake)
    status = status or {}
    return bool(status.get("startTime")) or status.get("phase") in (
        RunPhase.RUNNING,
        RunPhase.READY,
    )


def retrying(
    status: dict, reason: str, message: str, now: datetime, generation: int, *, delay_seconds: float
) -> dict:
    """The failed attempt is over and the next one waits out its backoff, Pending again."""
    attempt = int((status or {}).get("attempt") or 1)
    summary = (
        f"attempt {attempt} failed ({reason}: {message})"
        if message
        else f"attempt {attempt} failed ({reason})"
    )
    waiting = f"{summary}; attempt {attempt + 1} starts after a {delay_seconds:g}s backoff"
    conditions = {"Scheduled": ("False", "BackOff", waiting)}
    if _ran(status):
        conditions["Running"] = ("False", reason, message)
    new = _with(status, now, generation, **conditions)
    for key in ("assignedPod", "assignedPodUID", "exitCode", "completionTime", "reason"):
        new.pop(key, None)
    new.update(
        phase=RunPhase.PENDING, attempt=attempt + 1, message=status_message(waiting, MESSAGE_LIMIT)
    )
    return new


def finished(
    status: dict,
    phase: str,
    reason: str,
    message: str,
    now: datetime,
    generation: int,
    *,
    exit_code: int | None = None,
    completion: str | None = None,
    outputs: dict | None = None,
    artifact_refs: list | None = None,
) -> dict:
    """A terminal phase: Succeeded, Failed, Timeout or Cancelled."""
    ok = phase == RunPhase.SUCCEEDED
    reason = reason or ("Succeeded" if ok else phase)
    conditions = {"Completed": ("True", reason, message)}
    if _ran(status):
        conditions["Running"] = ("False", reason, message)
    new = _with(status, now, generation, **conditions)
    new.update(
        phase=phase,
        reason=reason,
        message=status_message(message, MESSAGE_LIMIT),
        completionTime=completion or format_time(now),
    )
    if exit_code is not None:
        new["exitCode"] = exit_code
    if outputs:
        new["outputs"] = dict(outputs)
    if artifact_refs:
        new["artifactRefs"] = list(artifact_refs)
    return new
