"""The Workflow controller's internal path past the ``use`` review (seed 002, permission boundary
rule 3).

Only the workflow controller identity may take it (the portal's own ``system:kruntimes:
workflow-controller``, or the ServiceAccount named by ``KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME``
when the cluster's API server asks through the webhook), and only for a child Run that it can
prove shares its workspace's owner: both have a controller ownerReference to the same live
WorkflowRun (found by UID in the Run's namespace), both carry ``kruntimes.io/workflowrun-uid``
equal to that UID, and both carry the same ``kruntimes.io/workflow-job``. Anything else (other
callers with copied labels, a stale or missing WorkflowRun, another job) is not trusted here.

The WorkflowRun kind is looked up in the registry by group and kind: this app never imports
``workflows``; while no WorkflowRun kind is registered, nothing takes this path.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings

from portal.auth.authorizer import UserInfo
from portal.auth.identities import CONTROLLER_PREFIX, CONTROLLERS_GROUP, register_controller
from portal.machinery.registry import registry

WORKFLOW_CONTROLLER = "workflow-controller"
WORKFLOWRUN_API_VERSION = "kruntimes.io/v1alpha1"
WORKFLOWRUN_KIND = "WorkflowRun"
WORKFLOWRUN_UID_LABEL = "kruntimes.io/workflowrun-uid"
WORKFLOW_JOB_LABEL = "kruntimes.io/workflow-job"

# What the workflow controller writes and reads; deliberately no ``use`` on
# persistentworkspaces: its child Runs get a workspace only through ``trusted_child``.
WORKFLOW_CONTROLLER_RULES = [
    {
        "apiGroups": ["kruntimes.io"],
        "resources": ["runs"],
        "verbs": ["create", "get", "list", "patch", "delete"],
    },
    {
        "apiGroups": ["kruntimes.io"],
        "resources": ["persistentworkspaces"],
        "verbs": ["create", "get", "list", "delete"],
    },
    # child WorkflowRuns of reusable-workflow jobs, and their cancel; ``delete`` too, as
    # setting an ownerReference needs it (portal.machinery.owner_admission)
    {
        "apiGroups": ["kruntimes.io"],
        "resources": ["workflowruns"],
        "verbs": ["get", "list", "create", "patch", "delete"],
    },
    # each WorkflowRun's snapshot of what it runs (status.snapshotName); ``delete`` as above
    {
        "apiGroups": ["apps"],
        "resources": ["controllerrevisions"],
        "verbs": ["create", "get", "list", "delete"],
    },
    # what makes it the controller of a WorkflowRun's children: their controller ownerReference
    # and labels need ``update`` on the WorkflowRun's finalizers, which users are not given
    {
        "apiGroups": ["kruntimes.io"],
        "resources": ["workflowruns/finalizers"],
        "verbs": ["update"],
    },
]


def register_workflow_controller() -> UserInfo:
    return register_controller(WORKFLOW_CONTROLLER, WORKFLOW_CONTROLLER_RULES)


def is_workflow_controller(user: UserInfo) -> bool:
    own = f"{CONTROLLER_PREFIX}{WORKFLOW_CONTROLLER}"
    if user.username == own and CONTROLLERS_GROUP in user.groups:
        return True
    configured = settings.KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME
    return bool(configured) and user.username == configured


def controller_owner_uid(meta: dict[str, Any]) -> tuple[str, str] | None:
    """(uid, name) of the one controller ownerReference, if it is a WorkflowRun."""
    refs = meta.get("ownerReferences") or []
    controllers = [r for r in refs if isinstance(r, dict) and r.get("controller") is True]
    if len(controllers) != 1:
        return None
    ref = controllers[0]
    if (ref.get("apiVersion"), ref.get("kind")) != (WORKFLOWRUN_API_VERSION, WORKFLOWRUN_KIND):
        return None
    uid, name = ref.get("uid"), ref.get("name")
    if not isinstance(uid, str) or not uid or not isinstance(name, str):
        return None
    return uid, name


def live_workflow_run(namespace: str, uid: str, name: str) -> bool:
    kind = registry.for_manifest(WORKFLOWRUN_API_VERSION, WORKFLOWRUN_KIND)
    if kind is None:
        return False
    try:
        parsed = uuid.UUID(uid)
    except ValueError:
        return False  # no object has such a uid
    found = kind.model.objects.filter(namespace=namespace, uid=parsed, name=name).first()
    return found is not None and found.deletion_timestamp is None


def trusted_child(user: UserInfo, run_meta: dict[str, Any], workspace: Any) -> bool:
    """Whether this Run, written by ``user``, is the workflow controller's child Run of the
    WorkflowRun that also owns ``workspace`` (a PersistentWorkspace row)."""
    if not is_workflow_controller(user):
        return False
    ws_meta = {"ownerReferences": workspace.owner_references or []}
    owner = controller_owner_uid(run_meta)
    if owner is None or controller_owner_uid(ws_meta) != owner:
        return False
    uid, name = owner
    run_labels = run_meta.get("labels") or {}
    ws_labels = workspace.labels or {}
    if run_labels.get(WORKFLOWRUN_UID_LABEL) != uid or ws_labels.get(WORKFLOWRUN_UID_LABEL) != uid:
        return False
    job = run_labels.get(WORKFLOW_JOB_LABEL)
    if not isinstance(job, str) or not job or ws_labels.get(WORKFLOW_JOB_LABEL) != job:
        return False
    return live_workflow_run(workspace.namespace, uid, name)
