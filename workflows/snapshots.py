"""A WorkflowRun's execution snapshot: the definitions it resolved when it started, kept in an
apps/v1 ControllerRevision it owns and named by ``status.snapshotName`` (kruntimes'
``workflow_snapshot.go``: ``<run>-snapshot-<10 hex of sha256(uid)>``, revision 1, the
``kruntimes.io/workflowrun-uid`` label, at most 1 MiB of data).

``data`` holds the run's frozen ``spec`` (jobs, inputs, outputs, workflowRef; not the
``cancelRequested`` switch), the Action each ``uses`` step calls (``actions.<job>.<step>``) and
the Workflow each ``uses`` job calls (``workflows.<job>``), as they were at the start, and for a
rerun of failed jobs only the job statuses it carries over (``carried.<job>``, ``workflows.reruns``). The
controller runs from it and from nothing else, so a later change to a Workflow or Action never
reaches a run that started. A name that does not resolve is left out: its step or job fails
with the same "not found" message when it is due.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from . import reruns
from .models import Action, Workflow, WorkflowRun
from .names import MAX_NAME, UID_LABEL, owner_reference

API_VERSION = "apps/v1"
KIND = "ControllerRevision"
SEPARATOR = "-snapshot-"
MAX_BYTES = 1 << 20
REVISION = 1
SPEC_FIELDS = ("workflowRef", "inputs", "outputs", "jobs")


class Unusable(Exception):
    """The run cannot have the snapshot it runs from (too large, or gone): the run fails."""


def snapshot_name(wfr: WorkflowRun) -> str:
    suffix = hashlib.sha256(str(wfr.uid).encode()).hexdigest()[:10]
    prefix = wfr.name[: MAX_NAME - len(SEPARATOR) - len(suffix)].rstrip("-.")
    return f"{prefix}{SEPARATOR}{suffix}" if prefix else f"snapshot-{suffix}"


def resolve(wfr: WorkflowRun) -> dict[str, Any]:
    """What the run runs: its spec and the Actions and Workflows it calls, as they are now."""
    run_spec = wfr.spec or {}
    spec = {key: run_spec[key] for key in SPEC_FIELDS if key in run_spec}
    jobs = spec.get("jobs") or {}
    action_names = {
        step["uses"] for job in jobs.values() for step in job.get("steps") or [] if step.get("uses")
    }
    workflow_names = {job["uses"] for job in jobs.values() if job.get("uses")}
    found_actions = _specs(Action, wfr.namespace, action_names)
    found_workflows = _specs(Workflow, wfr.namespace, workflow_names)
    actions: dict[str, dict] = {}
    workflows: dict[str, dict] = {}
    for job_name, job in jobs.items():
        if job.get("uses") in found_workflows:
            workflows[job_name] = {"name": job["uses"], "spec": found_workflows[job["uses"]]}
        for step in job.get("steps") or []:
            if step.get("uses") in found_actions:
                actions.setdefault(job_name, {})[step["name"]] = {
                    "name": step["uses"],
                    "spec": found_actions[step["uses"]],
                }
    data: dict[str, Any] = {"spec": spec, "actions": actions, "workflows": workflows}
    try:
        carried = reruns.carried_jobs(wfr)
    except reruns.SourceGone as exc:
        raise Unusable(str(exc)) from None
    if carried:
        data["carried"] = carried
    return data


def _specs(model, namespace: str, names: set[str]) -> dict[str, dict]:
    if not names:
        return {}
    found = model.objects.filter(namespace=namespace, name__in=names)
    return {obj.name: obj.spec or {} for obj in found}


def manifest(wfr: WorkflowRun, name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The ControllerRevision holding ``data`` (Unusable beyond 1 MiB of JSON)."""
    size = len(json.dumps(data, separators=(",", ":")).encode())
    if size > MAX_BYTES:
        raise Unusable(f"workflow snapshot is {size} bytes, exceeds {MAX_BYTES} byte limit")
    return {
        "apiVersion": API_VERSION,
        "metadata": {
            "name": name,
            "labels": {UID_LABEL: str(wfr.uid)},
            "ownerReferences": [owner_reference(wfr)],
        },
        "data": data,
        "revision": REVISION,
    }


def action(data: dict[str, Any], job: str, step: str) -> dict | None:
    """{"name", "spec"} of the Action the step calls, or None when it was not found."""
    return ((data.get("actions") or {}).get(job) or {}).get(step)


def workflow(data: dict[str, Any], job: str) -> dict | None:
    """{"name", "spec"} of the Workflow the job calls, or None when it was not found."""
    return (data.get("workflows") or {}).get(job)
