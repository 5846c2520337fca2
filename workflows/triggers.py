"""Wake the workflow controller after a commit: a WorkflowRun written, a child Run's phase
moved, a called WorkflowRun finished. The beat pass heals whatever an event missed."""

from __future__ import annotations

from portal.machinery.events import send_on_commit

from . import task_names
from .names import UID_LABEL


def request_reconcile(
    namespace: str | None = None, name: str | None = None, uid: str | None = None
):
    send_on_commit(task_names.RECONCILE, namespace, name, uid)


def on_workflow_run_change(wfr, event: str) -> None:
    if event in ("ADDED", "MODIFIED") and not wfr.is_finished:
        request_reconcile(wfr.namespace, wfr.name)


def on_run_phase_changed(sender=None, run=None, phase: str = "", **_) -> None:
    """A child Run (labelled with its WorkflowRun's UID) started or ended."""
    owner = (getattr(run, "labels", None) or {}).get(UID_LABEL)
    if owner:
        request_reconcile(uid=owner)
