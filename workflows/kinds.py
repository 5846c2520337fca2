"""The kinds the workflows app serves: kruntimes.io/v1alpha1 Workflow (``wf``), WorkflowRun
(``wfr``) and Action."""

from __future__ import annotations

from portal.machinery.owner_admission import register_controller_label
from portal.machinery.registry import IN_ALL, KRUNTIMES, Column, ResourceKind, registry
from portal.machinery.status_strategy import StatusStrategy, final_phases

GROUP = "kruntimes.io"
VERSION = "v1alpha1"
RUN_SUBRESOURCE = "run"  # POST workflows/<name>/run starts a WorkflowRun (workflows.views)


def _condition(obj, condition_type: str) -> str:
    for condition in (obj.status or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition.get("status", "")
    return ""


def _ready(obj) -> str:
    return _condition(obj, "Ready")


def register_workflow_kinds() -> None:
    from scheduling.models import Run, Runtime

    from .calls import call_cycle_causes
    from .injection import action_warnings, jobs_warnings, workflow_run_warnings
    from .models import FINISHED_RUN_PHASES, Action, Workflow, WorkflowRun
    from .names import CONTROLLER_LABELS
    from .reruns import copy_rerun
    from .serializers import (
        ActionSpecSerializer,
        DefinitionStatusSerializer,
        WorkflowRunSpecSerializer,
        WorkflowRunStatusSerializer,
        WorkflowSpecSerializer,
    )
    from .starting import freeze_workflow
    from .triggers import on_run_change, on_runtime_change, on_workflow_run_change
    from .validators import WORKFLOW_RUN_VALIDATORS

    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="Workflow",
            plural="workflows",
            description=(
                "Workflow is a reusable definition of jobs of steps, with inputs and outputs, "
                "that WorkflowRuns run."
            ),
            model=Workflow,
            categories=IN_ALL,
            short_names=("wf",),
            body={"spec": WorkflowSpecSerializer, "status": DefinitionStatusSerializer},
            subresources={RUN_SUBRESOURCE: ("create",)},
            validators=(call_cycle_causes,),
            warnings=(jobs_warnings,),
            columns=(Column("READY", _ready),),
        )
    )
    registry.watch(Run, on_run_change)  # a child Run's phase wakes its WorkflowRun
    registry.watch(Runtime, on_runtime_change)  # a job waiting for its Runtime starts
    for label in CONTROLLER_LABELS:  # only the workflow controller sets them
        register_controller_label(label, f"{GROUP}/{VERSION}", "WorkflowRun")
    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="WorkflowRun",
            plural="workflowruns",
            description=(
                "WorkflowRun is one run of a Workflow's jobs with given inputs; each step runs "
                "as a Run."
            ),
            model=WorkflowRun,
            categories=IN_ALL,
            short_names=("wfr",),
            status=StatusStrategy(rules=(final_phases("WorkflowRun", *FINISHED_RUN_PHASES),)),
            body={"spec": WorkflowRunSpecSerializer, "status": WorkflowRunStatusSerializer},
            defaulting=(copy_rerun, freeze_workflow),
            validators=WORKFLOW_RUN_VALIDATORS,
            warnings=(workflow_run_warnings,),
            # the controller runs after each write (and from beat): workflows.controller
            on_change=(on_workflow_run_change,),
            columns=(
                Column("PHASE", lambda o: o.phase),
                Column("WORKFLOW", lambda o: o.workflow),
                Column("MESSAGE", lambda o: (o.status or {}).get("message", ""), wide=True),
            ),
        )
    )
    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="Action",
            plural="actions",
            description=(
                "Action is a reusable sequence of steps that a workflow step runs with uses."
            ),
            model=Action,
            categories=KRUNTIMES,
            body={"spec": ActionSpecSerializer, "status": DefinitionStatusSerializer},
            warnings=(action_warnings,),
            columns=(Column("READY", _ready),),
        )
    )
