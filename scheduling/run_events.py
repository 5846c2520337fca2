"""The Events of a Run's life, recorded where each thing happens (``portal.events_recorder``).

Scheduled / Retrying when an attempt is bound to a Runtime Pod (the scheduler's batch), Started
and Ready from runtimed's reports, BackOff when a failed attempt waits for the next one, Lost
(PodGone for a pod that went away) when the control plane ends an attempt it cannot finish,
and Succeeded / Failed / Cancelled at the end. Messages are composed here from the attempt,
the pod's name, the phase and the condition reason: never from the spec, a report's free
text or a Secret.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from portal import event_writer, events_recorder
from portal.events_recorder import NORMAL, WARNING
from portal.machinery.registry import registry
from runtimed.protocol import Reason
from scheduling.models import Run, RunPhase

LOST_TEXT = {
    Reason.POD_GONE: "the Runtime Pod it was bound to is gone",
    Reason.POD_TERMINATING: "the Runtime Pod it was bound to is shutting down",
    Reason.POD_UNHEALTHY: "the Runtime Pod it was bound to stopped sending heartbeats",
    Reason.EXECUTION_LOST: "runtimed on its Runtime Pod no longer executes it",
}


def _kind():
    return registry.for_model(Run)


def _attempt(run: Any) -> int:
    return int((run.status or {}).get("attempt") or 1)


def bound(pairs: list[tuple[Any, Any]]) -> int:
    """The scheduler bound these (Run, pod) pairs: attempt 1 Scheduled, later ones Retrying
    (handed to the event writer; how many)."""
    items = []
    for run, pod in pairs:
        attempt = _attempt(run)
        if attempt == 1:
            message = f"Successfully assigned {run.namespace}/{run.name} to {pod.name}"
            items.append((run, "Scheduled", message, NORMAL))
        else:
            message = f"attempt {attempt} assigned to {pod.name}"
            items.append((run, "Retrying", message, NORMAL))
    # written behind the pass, on the event writer's thread: the binds do not wait for them
    event_writer.writer.submit(items, _kind(), events_recorder.COMPONENT)
    return len(items)


def attempt_ended(run: Run, reason: str, retried: bool, delay_seconds: float | None) -> None:
    """An attempt ended for ``reason``: Lost (or PodGone) when the control plane ended it,
    BackOff when another attempt follows after ``delay_seconds``."""
    attempt = _attempt(run) - (1 if retried else 0)
    if reason in LOST_TEXT:
        event = Reason.POD_GONE if reason == Reason.POD_GONE else "Lost"
        events_recorder.record(
            run, event, f"attempt {attempt} lost ({reason}): {LOST_TEXT[reason]}", type=WARNING
        )
    if retried:
        events_recorder.record(
            run,
            "BackOff",
            f"attempt {attempt} failed ({reason}); back-off {delay_seconds or 0:g}s "
            f"before attempt {attempt + 1}",
            type=WARNING,
        )


def phase_event(run: Any, phase: str) -> tuple[str, str, str] | None:
    """(reason, message, type) of the Event of a Run reaching ``phase``; None for none."""
    status = run.status or {}
    attempt = _attempt(run)
    if phase == RunPhase.RUNNING:
        pod = status.get("assignedPod") or ""
        return "Started", f"attempt {attempt} started on {pod}", NORMAL
    if phase == RunPhase.READY:
        return "Ready", f"attempt {attempt} is serving", NORMAL
    if phase == RunPhase.SUCCEEDED:
        return "Succeeded", f"attempt {attempt} succeeded", NORMAL
    if phase in (RunPhase.FAILED, RunPhase.TIMEOUT):
        reason = status.get("reason") or phase
        return "Failed", f"attempt {attempt} ended {phase} ({reason})", WARNING
    if phase == RunPhase.CANCELLED:
        return "Cancelled", f"attempt {attempt} cancelled", NORMAL
    return None


def on_run_change(run: Any, event_type: str) -> None:
    """A watcher of the Run kind: the Events of the phases a Run reaches, whoever wrote the
    phase, written behind the write on the event writer's thread (a report does not wait for
    its Event)."""
    if event_type != "MODIFIED" or not run.phase_changed:
        return
    event = phase_event(run, run.phase)
    if event is not None:
        reason, message, type_ = event
        # the Run as it is now: the writer's thread reads it later, and the caller goes on
        seen = SimpleNamespace(
            namespace=run.namespace,
            name=run.name,
            uid=run.uid,
            resource_version=run.resource_version,
        )
        event_writer.writer.submit_on_commit(
            [(seen, reason, message, type_)], _kind(), events_recorder.COMPONENT
        )


def artifact_cleanup_failed(run: Run) -> None:
    """Deleting a deleted Run's artifacts failed; the cleanup retries each pass (the store's
    own error stays in the controller's log: it may name the store's endpoint or account)."""
    events_recorder.record(
        run,
        "ArtifactCleanupFailed",
        "the artifacts of this Run could not be deleted from its artifact store; "
        "the cleanup retries and the Run stays until it succeeds",
        type=WARNING,
    )
