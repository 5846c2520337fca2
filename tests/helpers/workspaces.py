"""PersistentWorkspaces in the database, created through the store as an operator would."""

from __future__ import annotations

from portal.machinery import store
from portal.machinery.registry import registry
from tests.helpers.operator import OPERATOR
from workspaces.models import PersistentWorkspace

WORKSPACES = registry.get("kruntimes.io", "v1alpha1", "persistentworkspaces")


def workspace_manifest(name: str = "ws", runtime: str = "bash", **spec) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "PersistentWorkspace",
        "metadata": {"name": name},
        "spec": {"runtime": runtime, **spec},
    }


def make_workspace(
    name: str = "ws", runtime: str = "bash", namespace: str = "default", **spec
) -> PersistentWorkspace:
    return store.create(
        WORKSPACES, workspace_manifest(name, runtime, **spec), namespace=namespace, context=OPERATOR
    )


def fresh_workspace(ws: PersistentWorkspace) -> PersistentWorkspace | None:
    return PersistentWorkspace.objects.filter(pk=ws.pk).first()
