"""Workspace admission tests: WorkflowRuns (one inline ``build`` job), Roles granting ``use``, and Runs that
reference a workspace, all written through the store (workspaces: ``tests.helpers.workspaces``)."""

from __future__ import annotations

from portal.machinery import store
from portal.machinery.registry import registry
from tests.helpers.operator import OPERATOR
from tests.helpers.runs import run_manifest

API_VERSION = "kruntimes.io/v1alpha1"
UID_LABEL = "kruntimes.io/workflowrun-uid"
JOB_LABEL = "kruntimes.io/workflow-job"


def kind(name: str):
    return registry.for_manifest(API_VERSION, name)


def make_workflow_run(name: str = "wfr", namespace: str = "default"):
    return store.create(
        kind("WorkflowRun"),
        {
            "apiVersion": API_VERSION,
            "kind": "WorkflowRun",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "jobs": {"build": {"runs-on": "bash", "steps": [{"name": "s", "run": "true"}]}}
            },
        },
        context=OPERATOR,
    )


def owned_by(wfr, job: str = "build", controller: bool = True) -> dict:
    """The metadata the workflow controller gives a child Run and its job workspace."""
    return {
        "labels": {UID_LABEL: str(wfr.uid), JOB_LABEL: job},
        "ownerReferences": [
            {
                "apiVersion": API_VERSION,
                "kind": "WorkflowRun",
                "name": wfr.name,
                "uid": str(wfr.uid),
                "controller": controller,
            }
        ],
    }


def workspace_run(name: str = "r", workspace: str = "ws", metadata=None, **spec) -> dict:
    return run_manifest(name, metadata, workspace={"name": workspace}, **spec)


def make_role(name: str, rules: list[dict], namespace: str = "default") -> None:
    store.create(
        kind_rbac("Role"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": rules,
        },
        context=OPERATOR,
    )


def bind_role(name: str, role: str, user: str = "alice", namespace: str = "default") -> None:
    store.create(
        kind_rbac("RoleBinding"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "User", "name": user}],
        },
        context=OPERATOR,
    )


def kind_rbac(name: str):
    return registry.for_manifest("rbac.authorization.k8s.io/v1", name)


RUN_WRITER = [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["create", "get"]}]


def grant_runs(user: str = "alice") -> None:
    """May create Runs in ``default`` (and nothing about workspaces)."""
    make_role("run-writer", RUN_WRITER)
    bind_role("run-writer", "run-writer", user)


def grant_ownership(user: str = "alice") -> None:
    """What lets ``user`` past owner admission with the controller's labels and owner reference
    (``delete runs``, ``update workflowruns/finalizers``), so a test reaches the ``use`` review."""
    rules = [
        {"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["delete"]},
        {
            "apiGroups": ["kruntimes.io"],
            "resources": ["workflowruns/finalizers"],
            "verbs": ["update"],
        },
    ]
    make_role("owner-claimer", rules)
    bind_role("owner-claimer", "owner-claimer", user)


def grant_use(names: list[str] | None = None, user: str = "alice") -> None:
    """``use`` on ``persistentworkspaces/use`` in ``default``, for ``names`` (None: any)."""
    rule = {
        "apiGroups": ["kruntimes.io"],
        "resources": ["persistentworkspaces/use"],
        "verbs": ["use"],
    }
    if names is not None:
        rule["resourceNames"] = names
    make_role("workspace-user", [rule])
    bind_role("workspace-user", "workspace-user", user)
