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
    """New, or asked something new (its spec, labels, a cancel, a deletion): the controller's
    own status writes do not wake it again."""
    if wfr.is_finished:
        return
    if event == "ADDED" or (event == "MODIFIED" and wfr.desired_changed):
        request_reconcile(str(wfr.uid))


def on_run_change(run, event: str) -> None:
    """A watcher of the Run kind: a child Run (labelled with its WorkflowRun's UID) started or
    ended, whoever wrote its phase."""
    if event != "MODIFIED" or not run.phase_changed:
        return
    owner = (run.labels or {}).get(UID_LABEL)
    if owner:
        request_reconcile(owner)


def on_runtime_change(runtime, event: str) -> None:
    """A Runtime created: the unfinished WorkflowRuns of its namespace look again, so a job
    waiting for it (RuntimeNotFound) starts now rather than at the next resync."""
    if event != "ADDED":
        return
    from .models import WorkflowRun, WorkflowRunPhase

    waiting = WorkflowRun.objects.filter(
        namespace=runtime.namespace,
        deletion_timestamp__isnull=True,
        phase__in=(WorkflowRunPhase.PENDING, WorkflowRunPhase.RUNNING),
    ).values_list("uid", flat=True)
    workqueue.add_many(QUEUE, [str(uid) for uid in waiting])
