"""Names and labels of what a WorkflowRun owns: deterministic, so a reconcile that runs twice
(or two at once) finds the child it made instead of making another."""

from __future__ import annotations

import hashlib
import hmac
import re

from django.conf import settings

from workspaces.ownership import WORKFLOW_JOB_LABEL, WORKFLOWRUN_UID_LABEL

UID_LABEL = WORKFLOWRUN_UID_LABEL  # kruntimes.io/workflowrun-uid
JOB_LABEL = WORKFLOW_JOB_LABEL  # kruntimes.io/workflow-job
STEP_LABEL = "kruntimes.io/workflow-step"
CONTROLLER_LABELS = (UID_LABEL, JOB_LABEL, STEP_LABEL)
API_VERSION = "kruntimes.io/v1alpha1"
MAX_NAME = 253
_NOT_DNS = re.compile(r"[^a-z0-9-]+")


def child_name(*parts: str) -> str:
    """``<run>-<job>-<step>`` as a DNS-1123 name; a name that had to change (case, ``_``,
    ``.``, length) gets a short hash of the original, so two parts never collide."""
    raw = "-".join(parts)
    name = _NOT_DNS.sub("-", raw.lower()).strip("-")
    if name == raw and len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11].rstrip('-')}-{digest}"


def second_name(wfr, name: str) -> str:
    """The name a child gets when a stranger holds its deterministic one: ``name`` plus an HMAC
    (keyed by SECRET_KEY) of the WorkflowRun's UID and ``name``, which nobody can take first."""
    key = settings.SECRET_KEY.encode()
    digest = hmac.new(key, f"{wfr.uid}/{name}".encode(), hashlib.sha256).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11].rstrip('-')}-{digest}"


def owner_reference(wfr) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkflowRun",
        "name": wfr.name,
        "uid": str(wfr.uid),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_labels(wfr, job: str, step: str | None = None) -> dict[str, str]:
    labels = {UID_LABEL: str(wfr.uid), JOB_LABEL: job}
    if step is not None:
        labels[STEP_LABEL] = step
    return labels


def owned_by(obj, wfr) -> bool:
    """Is ``obj`` this WorkflowRun's (its label and its controller ownerReference)?"""
    if (obj.labels or {}).get(UID_LABEL) != str(wfr.uid):
        return False
    return any(
        ref.get("uid") == str(wfr.uid) and ref.get("controller") is True
        for ref in obj.owner_references or []
    )
