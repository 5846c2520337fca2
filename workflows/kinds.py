"""TEMPORARY on this branch (replaced by the API branch's kinds): the three kinds, loosely typed."""

from __future__ import annotations

from portal.machinery.registry import ResourceKind, registry
from portal.machinery.serializers import StrictSerializer


class _Spec(StrictSerializer):
    def to_internal_value(self, data):
        return data


def register_workflow_kinds() -> None:
    from .models import Action, Workflow, WorkflowRun
    from .triggers import on_workflow_run_change

    for kind, plural, model, short in (
        ("Workflow", "workflows", Workflow, ("wf",)),
        ("WorkflowRun", "workflowruns", WorkflowRun, ("wfr",)),
        ("Action", "actions", Action, ()),
    ):
        registry.register(
            ResourceKind(
                group="kruntimes.io",
                version="v1alpha1",
                kind=kind,
                plural=plural,
                model=model,
                short_names=short,
                body={"spec": _Spec, "status": _Spec},
                on_change=(on_workflow_run_change,) if kind == "WorkflowRun" else (),
            )
        )
