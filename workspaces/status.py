"""The one status writer of the PersistentWorkspace kind: each transition's new status, and the
compare-and-set that writes it.

Transitions are pure functions of the current status (``waiting``, ``bound``, ``pod_readiness``,
``lost``, ``released``, ``used``); conditions keep their lastTransitionTime unless their status
flips (``set_condition``). ``write`` is the compare-and-set every workspace controller uses
(binding, cleanup, the operator's actions): a stale write loses and the next pass retries. A
write that changes what the scheduler fences on wakes the scheduler.

Conditions: ``Bound`` (True: BoundToRuntimePod; False: WaitingForRuntimePod, RuntimeNotFound,
RuntimeTerminating, RuntimePodGone, RuntimePodReplaced), ``PodReady`` (while bound: RuntimePodReady /
RuntimePodNotReady), ``Cleanup`` (True once cleanup was requested: TTLExpired, Deleted,
ReleasedByOperator).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from portal import events_recorder
from portal.machinery import history
from portal.machinery.conditions import format_time, get_condition, with_conditions
from scheduling.triggers import request_scheduling

from .models import PersistentWorkspace, WorkspacePhase, workspace_path

MESSAGE_LIMIT = 1024


def _with(status: dict, now: datetime, generation: int, **conditions: tuple[str, str, str]) -> dict:
    bounded = {
        ctype: (cstatus, reason, message[:MESSAGE_LIMIT])
        for ctype, (cstatus, reason, message) in conditions.items()
    }
    return with_conditions(status, now, generation, bounded)


def waiting(status: dict, runtime: str, reason: str, message: str, now: datetime, gen: int) -> dict:
    """Pending: no ready Runtime Pod to bind to yet (nothing reserved meanwhile)."""
    new = _with(status, now, gen, Bound=("False", reason, message))
    new.update(phase=WorkspacePhase.PENDING, runtime=runtime)
    return new


def bound(
    status: dict, ws: PersistentWorkspace, pod_name: str, pod_uid: str, now: datetime
) -> dict:
    """Bound to one pod, fenced by its UID; the path is where runtimed will make it."""
    new = _with(
        status,
        now,
        ws.generation,
        Bound=("True", "BoundToRuntimePod", f"bound to Runtime Pod {pod_name} (uid {pod_uid})"),
        PodReady=("True", "RuntimePodReady", f"Runtime Pod {pod_name} is ready"),
    )
    new.update(
        phase=WorkspacePhase.BOUND,
        runtime=ws.runtime,
        boundPod=pod_name,
        boundPodUID=pod_uid,
        path=workspace_path(ws.name),
    )
    return new


def pod_readiness(status: dict, ready: bool, now: datetime, gen: int) -> dict:
    pod = status.get("boundPod", "")
    if ready:
        return _with(
            status, now, gen, PodReady=("True", "RuntimePodReady", f"Runtime Pod {pod} is ready")
        )
    return _with(
        status,
        now,
        gen,
        PodReady=(
            "False",
            "RuntimePodNotReady",
            f"Runtime Pod {pod} is not ready: Runs using this workspace wait for it",
        ),
    )


def lost(status: dict, reason: str, message: str, now: datetime, gen: int) -> dict:
    """Lost: the bound pod is gone or replaced. Terminal: never rebound to another pod."""
    new = _with(
        status,
        now,
        gen,
        Bound=("False", reason, message),
        PodReady=("False", reason, message),
    )
    new["phase"] = WorkspacePhase.LOST
    return new


def released(status: dict, reason: str, message: str, now: datetime, gen: int) -> dict:
    """Released: cleanup requested; terminal for scheduling (no new Run may claim it)."""
    new = _with(status, now, gen, Cleanup=("True", reason, message))
    new["phase"] = WorkspacePhase.RELEASED
    return new


def used(status: dict, last_used: datetime) -> dict:
    new = dict(status or {})
    new["lastUsedTime"] = format_time(last_used)
    return new


def condition(status: dict, ctype: str) -> dict[str, Any]:
    """The condition of that type ({} when there is none)."""
    return get_condition(status.get("conditions"), ctype) or {}


def write(ws: PersistentWorkspace, status: dict) -> bool:
    """Compare-and-set ``status`` (and its columns) at the resourceVersion ``ws`` was read at.

    Returns whether it won; on success ``ws`` holds the new status and resourceVersion. A write
    that moves the phase or the bound pod wakes the scheduler (Runs that wait on it requeue).
    """
    if status == (ws.status or {}):
        return False
    columns = PersistentWorkspace.status_columns(status)
    fenced_before = (ws.phase, ws.bound_pod, ws.bound_pod_uid)
    if not history.compare_and_set(ws, {"status": status, **columns}):
        return False
    if (ws.phase, ws.bound_pod, ws.bound_pod_uid) != fenced_before:
        request_scheduling("workspace")
    if ws.phase != fenced_before[0]:
        _record_phase(ws, status)
    return True


def _record_phase(ws: PersistentWorkspace, status: dict) -> None:
    """The Event of the phase the workspace reached (messages from names and reasons only)."""
    if ws.phase == WorkspacePhase.BOUND:
        events_recorder.record(ws, "Bound", f"bound to Runtime Pod {ws.bound_pod}")
    elif ws.phase == WorkspacePhase.LOST:
        reason = condition(status, "Bound").get("reason") or "Lost"
        events_recorder.record(
            ws,
            "Lost",
            f"lost its Runtime Pod {ws.bound_pod} ({reason}); it is never rebound",
            type=events_recorder.WARNING,
        )
    elif ws.phase == WorkspacePhase.RELEASED:
        reason = condition(status, "Cleanup").get("reason") or "Released"
        events_recorder.record(ws, "Released", f"released for cleanup ({reason})")
