"""Running a finished WorkflowRun again: ``spec.rerunOf`` (as ``argo resubmit`` / ``argo retry``
and GitHub's "Re-run all jobs" / "Re-run failed jobs").

At create (``copy_rerun``, a defaulting hook of the WorkflowRun kind, so every writer gets it)
the named run, in the same namespace, must be readable by the creator (``get``: a name never
reaches another namespace), exist and be finished. Its frozen jobs, outputs, workflowRef and
inputs are copied; ``rerunOf.uid`` records which run it was, and the label
``kruntimes.io/rerun-of: <name>`` lets the old run find its reruns (``reruns_of`` checks the
uid too, so a label set by hand or a name reused links nothing). Inputs may be overridden,
except with ``failedJobsOnly``: the jobs carried over computed their outputs from the old ones.

With ``failedJobsOnly`` the jobs that Succeeded in the old run are carried over
(``carried_jobs``, frozen into the run's snapshot at its first pass): their status (outputs,
artifacts, steps whose ``runName`` are the old run's Runs) is the new run's from the start, so
``${{ jobs.<job>.outputs.<name> }}`` and ``artifacts`` of the jobs that run again read them.
Their artifacts live as long as the old Runs, which the old run owns: the first pass adds the
new run as a second, non-controller owner of each carried Run and called WorkflowRun
(``keep_carried``), so deleting the old run leaves them to the rerun (the garbage collector
deletes a dependent only when all its owners are gone) and deleting the rerun too frees them.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from portal import event_writer
from portal.events_recorder import COMPONENT, NORMAL
from portal.machinery import errors, store
from portal.machinery.admission import WriteContext, authorize
from portal.machinery.errors import FieldError, StatusError
from portal.machinery.registry import ResourceKind, registry

from .models import CARRIED_REASON, JobPhase, WorkflowRun
from .names import API_VERSION

log = logging.getLogger(__name__)

RERUN_OF_LABEL = "kruntimes.io/rerun-of"
LABEL_VALUE_MAX = 63
COPIED = ("jobs", "outputs", "workflowRef")


class SourceGone(Exception):
    """The run a failedJobsOnly rerun carries jobs from is gone before its first pass."""


def _ref(spec: Any) -> dict | None:
    ref = spec.get("rerunOf") if isinstance(spec, dict) else None
    return ref if isinstance(ref, dict) else None


def copy_rerun(
    kind: ResourceKind, manifest: dict[str, Any], namespace: str | None, context: WriteContext
) -> list[FieldError]:
    """Fill a rerun's spec from the run it names (see the module); the causes that refuse it."""
    spec = manifest.get("spec")
    ref = _ref(spec)
    if ref is None or not isinstance(spec, dict):
        return []
    name, only_failed = ref.get("name"), ref.get("failedJobsOnly", False)
    if not isinstance(name, str) or not name or not isinstance(only_failed, bool):
        return []  # the serializers say what is wrong
    authorize(context, kind, "get", namespace, name)  # 403 before saying whether it exists
    old = WorkflowRun.objects.filter(namespace=namespace, name=name).first()
    if old is None:
        return [
            errors.field_not_found(
                "spec.rerunOf.name",
                f'Not found: "{name}": no WorkflowRun of that name in namespace "{namespace}"',
            )
        ]
    uid = ref.get("uid")
    if uid not in (None, "") and uid != str(old.uid):
        return [
            errors.invalid(
                "spec.rerunOf.uid",
                f'Invalid value: "{uid}": WorkflowRun "{name}" is another object now '
                f'(uid "{old.uid}")',
            )
        ]
    if old.deletion_timestamp is not None:
        return [
            errors.invalid(
                "spec.rerunOf.name",
                f'Invalid value: "{name}": WorkflowRun "{name}" is being deleted',
            )
        ]
    if not old.is_finished:
        return [
            errors.invalid(
                "spec.rerunOf.name",
                f'Invalid value: "{name}": WorkflowRun "{name}" is still running (phase '
                f"{old.phase}): only a Succeeded, Failed or Cancelled run can be rerun",
            )
        ]
    old_spec = old.spec or {}
    causes = [
        errors.forbidden(f"spec.{field}", "Forbidden: a rerun runs the spec of the run it reruns")
        for field in COPIED
        if spec.get(field) is not None and spec.get(field) != old_spec.get(field)
    ]
    given = spec.get("inputs")
    old_inputs = old_spec.get("inputs") or {}
    if given is not None and not isinstance(given, dict):
        return causes  # the serializers say what is wrong
    if given and only_failed:
        causes.append(
            errors.forbidden(
                "spec.inputs",
                "Forbidden: a rerun of failed jobs only keeps the inputs of the run it reruns "
                "(the jobs carried over computed their outputs from them)",
            )
        )
    causes += [
        errors.forbidden(f"spec.inputs.{key}", f'Forbidden: WorkflowRun "{name}" has no such input')
        for key in given or {}
        if key not in old_inputs
    ]
    if causes:
        return causes
    spec["inputs"] = {**old_inputs, **(given or {})}
    for field in COPIED:
        if old_spec.get(field) is not None:
            spec[field] = copy.deepcopy(old_spec[field])
    spec["rerunOf"] = {"name": name, "failedJobsOnly": only_failed, "uid": str(old.uid)}
    meta = manifest.get("metadata")
    if isinstance(meta, dict):
        labels = dict(meta.get("labels") or {}) if isinstance(meta.get("labels"), dict) else {}
        labels.pop(RERUN_OF_LABEL, None)
        if len(name) <= LABEL_VALUE_MAX:
            labels[RERUN_OF_LABEL] = name
        meta["labels"] = labels
    return []


def source_of(wfr: WorkflowRun) -> WorkflowRun | None:
    """The run ``wfr`` reruns, if it still exists (the same uid)."""
    ref = _ref(wfr.spec)
    if ref is None or not ref.get("uid"):
        return None
    return WorkflowRun.objects.filter(namespace=wfr.namespace, uid=ref["uid"]).first()


def reruns_of(wfr: WorkflowRun):
    """The WorkflowRuns that rerun ``wfr`` (its label and its uid), oldest first."""
    return WorkflowRun.objects.filter(
        namespace=wfr.namespace,
        labels__contains={RERUN_OF_LABEL: wfr.name},
        spec__rerunOf__uid=str(wfr.uid),
    ).order_by("creation_timestamp", "pk")


def carried_jobs(wfr: WorkflowRun) -> dict[str, dict]:
    """The job statuses a failedJobsOnly rerun starts with: those that Succeeded in the run it
    reruns, as they were there (raises SourceGone when that run is gone)."""
    ref = _ref(wfr.spec)
    if ref is None or not ref.get("failedJobsOnly"):
        return {}
    old = source_of(wfr)
    if old is None:
        raise SourceGone(
            f"the WorkflowRun {ref.get('name')} this run reruns the failed jobs of is gone"
        )
    carried = {}
    for job, state in ((old.status or {}).get("jobs") or {}).items():
        if isinstance(state, dict) and state.get("phase") == JobPhase.SUCCEEDED:
            carried[job] = {
                **copy.deepcopy(state),
                "reason": CARRIED_REASON,
                "message": f"succeeded in WorkflowRun {old.name}; carried over",
            }
    return carried


def carried_children(carried: dict[str, dict]) -> list[tuple[str, str]]:
    """(kind, name) of what the carried jobs point at: their steps' Runs (and their Action
    steps' Runs) and the WorkflowRuns of called-workflow jobs."""
    found: list[tuple[str, str]] = []
    for state in carried.values():
        if state.get("workflowRunName"):
            found.append(("WorkflowRun", state["workflowRunName"]))
        for step in state.get("steps") or []:
            for item in [step, *(step.get("actionSteps") or [])]:
                if isinstance(item, dict) and item.get("runName"):
                    found.append(("Run", item["runName"]))
    return found


def owner_reference(wfr: WorkflowRun) -> dict:
    """A second owner: not the controller, and not blocking the old run's deletion."""
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkflowRun",
        "name": wfr.name,
        "uid": str(wfr.uid),
        "controller": False,
        "blockOwnerDeletion": False,
    }


def keep_carried(wfr: WorkflowRun, carried: dict[str, dict], context: WriteContext) -> int:
    """Make ``wfr`` an owner of what its carried jobs point at (see the module); how many it
    now owns too. A child gone or refused is logged: its step's artifacts may be gone."""
    from scheduling.models import Run

    models = {"Run": Run, "WorkflowRun": WorkflowRun}
    kept = 0
    for kind_name, name in carried_children(carried):
        obj = models[kind_name].objects.filter(namespace=wfr.namespace, name=name).first()
        if obj is None or obj.deletion_timestamp is not None:
            log.info("WorkflowRun %s: carried %s %s is gone", wfr.name, kind_name, name)
            continue
        refs = list(obj.owner_references or [])
        if any(r.get("uid") == str(wfr.uid) for r in refs):
            kept += 1
            continue
        kind = registry.for_manifest(API_VERSION, kind_name)
        try:
            store.patch(
                kind,
                wfr.namespace,
                name,
                {"metadata": {"ownerReferences": [*refs, owner_reference(wfr)]}},
                context=context,
            )
        except StatusError as exc:
            log.warning("WorkflowRun %s: keeping %s %s refused: %s", wfr.name, kind_name, name, exc)
            continue
        kept += 1
    return kept


def record_link(wfr: WorkflowRun, carried: dict[str, dict]) -> None:
    """Events on both runs once the rerun's first pass commits: RerunStarted on the new,
    Rerun on the old."""
    ref = _ref(wfr.spec) or {}
    old = source_of(wfr)
    what = "its failed jobs" if ref.get("failedJobsOnly") else "all its jobs"
    kept = f" (carried over: {', '.join(sorted(carried))})" if carried else ""
    items = [(wfr, "RerunStarted", f"rerun of WorkflowRun {ref.get('name')}: {what}{kept}", NORMAL)]
    if old is not None:
        items.append((old, "Rerun", f"rerun as WorkflowRun {wfr.name}: {what}", NORMAL))
    event_writer.writer.submit_on_commit(items, registry.for_model(WorkflowRun), COMPONENT)
