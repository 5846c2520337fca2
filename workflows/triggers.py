"""Wake the workflow controller: each event adds the WorkflowRun's UID to its work queue
(``portal.machinery.workqueue``: wake-ups of a waiting WorkflowRun merge into one reconcile,
one worker reconciles a WorkflowRun at a time). A WorkflowRun written, a child Run's phase
moved, a called WorkflowRun finished; beat's pass adds every unfinished one (the resync)."""

from __future__ import annotations

from portal.machinery import workqueue

from .names import UID_LABEL

QUEUE = "workflows"


def request_reconcile(uid: str) -> None:
    workqueue.add(QUEUE, uid)


def on_workflow_run_change(wfr, event: str) -> None:
    if event in ("ADDED", "MODIFIED") and not wfr.is_finished:
        request_reconcile(str(wfr.uid))


def on_run_phase_changed(sender=None, run=None, phase: str = "", **_) -> None:
    """A child Run (labelled with its WorkflowRun's UID) started or ended."""
    owner = (getattr(run, "labels", None) or {}).get(UID_LABEL)
    if owner:
        request_reconcile(owner)
