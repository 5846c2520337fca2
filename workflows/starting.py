"""Starting a Workflow: a WorkflowRun created with ``spec.workflowRef`` and ``spec.inputs`` (and
no jobs) gets a frozen copy of the Workflow's jobs and outputs at create.

``freeze_workflow`` is the WorkflowRun kind's ``defaulting`` hook, so every writer (REST, the
``workflows/<name>/run`` endpoint, ``manage.py run-workflow``, apply, the admin) gets the same
result: the inputs checked against the Workflow's (unknown ones refused, required ones
enforced, defaults applied, every declared input then set) before the WorkflowRun is
validated like any other. ``start`` is what the endpoint and the command share.
"""

from __future__ import annotations

import copy
from typing import Any

from portal.machinery import errors, store
from portal.machinery.admission import WriteContext, authorize
from portal.machinery.errors import FieldError
from portal.machinery.registry import ResourceKind, registry

from .models import Workflow, WorkflowRun

API_VERSION = "kruntimes.io/v1alpha1"
GENERATED_PREFIX_MAX = 58  # Kubernetes: 63 minus the 5 random characters
START_BODY_FIELDS = ("inputs", "metadata")


def freeze_workflow(
    kind: ResourceKind, manifest: dict[str, Any], namespace: str | None, context: WriteContext
) -> list[FieldError]:
    """Copy the referenced Workflow's jobs and outputs into a WorkflowRun that has none, and
    resolve its inputs; a WorkflowRun with jobs (or without a workflowRef) is left as is."""
    spec = manifest.get("spec")
    if not isinstance(spec, dict) or spec.get("jobs") is not None:
        return []
    ref = spec.get("workflowRef")
    name = ref.get("name") if isinstance(ref, dict) else None
    given = spec.get("inputs") if spec.get("inputs") is not None else {}
    if not isinstance(name, str) or not name or not isinstance(given, dict):
        return []  # the serializers say what is wrong
    workflow = Workflow.objects.filter(namespace=namespace, name=name).first()
    if workflow is None:
        return [
            errors.field_not_found(
                "spec.workflowRef.name",
                f'Not found: "{name}": no Workflow of that name in namespace "{namespace}"',
            )
        ]
    declared = (workflow.spec or {}).get("inputs") or {}
    causes = [
        errors.forbidden(f"spec.inputs.{key}", f'Forbidden: Workflow "{name}" has no such input')
        for key in given
        if key not in declared
    ]
    causes += [
        errors.required(
            f"spec.inputs.{key}", f'Required value: Workflow "{name}" requires this input'
        )
        for key, input_spec in declared.items()
        if (input_spec or {}).get("required") and key not in given
    ]
    if causes:
        return causes
    spec["inputs"] = {
        key: given[key] if key in given else (input_spec or {}).get("default", "")
        for key, input_spec in declared.items()
    }
    spec["jobs"] = copy.deepcopy(workflow.spec.get("jobs"))
    if workflow.spec.get("outputs"):
        spec["outputs"] = copy.deepcopy(workflow.spec["outputs"])
    return []


def run_manifest(workflow: str, inputs: Any = None, metadata: Any = None) -> dict[str, Any]:
    """The WorkflowRun that starts ``workflow``: named by ``metadata`` (``name`` or
    ``generateName``), else ``<workflow>-<5 random characters>``. A ``metadata`` that is not
    an object is passed on for the store to refuse."""
    meta: Any = metadata
    if metadata is None or isinstance(metadata, dict):
        meta = dict(metadata or {})
        if not meta.get("name") and not meta.get("generateName"):
            meta["generateName"] = f"{workflow}-"[:GENERATED_PREFIX_MAX]
    spec: dict[str, Any] = {"workflowRef": {"name": workflow}}
    if inputs is not None:
        spec["inputs"] = inputs
    return {"apiVersion": API_VERSION, "kind": "WorkflowRun", "metadata": meta, "spec": spec}


def check_start_body(body: Any) -> None:
    """``{"inputs": {...}, "metadata": {...}}``, both optional: a 400 for anything else."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body must be a JSON object: {inputs, metadata}")
    unknown = sorted(set(body) - set(START_BODY_FIELDS))
    if unknown:
        raise errors.bad_request(
            "the body may hold only inputs and metadata",
            [errors.forbidden(key, f'unknown field "{key}"') for key in unknown],
        )


def workflow_run_kind() -> ResourceKind:
    kind = registry.for_model(WorkflowRun)
    assert kind is not None  # registered by the app's ready()
    return kind


def start(
    namespace: str,
    workflow: str,
    *,
    inputs: Any = None,
    metadata: Any = None,
    context: WriteContext,
) -> WorkflowRun:
    """Create the WorkflowRun of ``workflow`` (a 404 when there is no such Workflow), as
    ``context.user``: authorized as ``create`` on workflowruns."""
    kind = workflow_run_kind()
    context = authorize(context, kind, "create", namespace)
    workflow_kind = registry.for_model(Workflow)
    assert workflow_kind is not None
    store.get_object(workflow_kind, namespace, workflow)
    run: WorkflowRun = store.create(
        kind, run_manifest(workflow, inputs, metadata), namespace=namespace, context=context
    )
    return run
