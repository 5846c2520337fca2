"""Workflows, WorkflowRuns, Actions and a WorkflowRun's child Runs in the database, for the
workflows admin's tests.

The rows are written by the ORM in the API.md shape (the controller's status is not built
here), so a page can be shown in any state.
"""

from __future__ import annotations

from typing import Any

from portal.machinery import store
from scheduling.models import Run
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNS, make_run
from workflows.models import Action, Workflow, WorkflowRun

GROUP, VERSION = "kruntimes.io", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
WORKFLOWRUN_UID = "kruntimes.io/workflowrun-uid"
WORKFLOW_JOB = "kruntimes.io/workflow-job"
WORKFLOW_STEP = "kruntimes.io/workflow-step"


def _save(obj: Any) -> Any:
    sync = getattr(obj, "sync_columns", None)
    if sync is not None:
        sync()
    obj.save()
    return obj


def make_workflow(
    name: str, jobs: dict, *, namespace: str = "default", inputs: dict | None = None, **spec
) -> Workflow:
    body = {"jobs": jobs, **({"inputs": inputs} if inputs is not None else {}), **spec}
    return _save(Workflow(namespace=namespace, name=name, spec=body))


def make_action(name: str, steps: list, *, namespace: str = "default", **spec) -> Action:
    return _save(Action(namespace=namespace, name=name, spec={"steps": steps, **spec}))


def make_workflow_run(
    name: str,
    jobs: dict,
    *,
    namespace: str = "default",
    workflow: str = "",
    status: dict | None = None,
    inputs: dict | None = None,
    labels: dict | None = None,
    **spec,
) -> WorkflowRun:
    body: dict = {"jobs": jobs, "inputs": inputs or {}, **spec}
    if workflow:
        body["workflowRef"] = {"name": workflow}
    return _save(
        WorkflowRun(
            namespace=namespace, name=name, spec=body, status=status or {}, labels=labels or {}
        )
    )


def set_status(run: WorkflowRun, status: dict) -> WorkflowRun:
    run.status = status
    return _save(run)


def make_step_run(
    workflow_run: WorkflowRun,
    job: str,
    step: str,
    name: str | None = None,
    *,
    status: dict | None = None,
) -> Run:
    """A child Run as the controller creates one: the workflow labels and a controller
    ownerReference to the WorkflowRun."""
    run = make_run(
        name or f"{workflow_run.name}-{job}-{step}",
        namespace=workflow_run.namespace,
        labels={
            WORKFLOWRUN_UID: str(workflow_run.uid),
            WORKFLOW_JOB: job,
            WORKFLOW_STEP: step,
        },
        owner_references=[
            {
                "apiVersion": API_VERSION,
                "kind": "WorkflowRun",
                "name": workflow_run.name,
                "uid": str(workflow_run.uid),
                "controller": True,
            }
        ],
    )
    if status is not None:
        store.patch(
            RUNS,
            run.namespace,
            run.name,
            {"status": status},
            subresource="status",
            context=OPERATOR,
        )
        run = Run.objects.get(pk=run.pk)
    return run
