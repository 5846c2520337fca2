"""PersistentWorkspaces in the database, created through the store and moved through their
phases by the workspace status writer, as the controllers do."""

from __future__ import annotations

from django.utils import timezone

from portal.machinery import store
from portal.machinery.registry import registry
from portal.models import Namespace
from scheduling.models import RuntimePod
from tests.helpers.operator import OPERATOR
from workspaces import status as workspace_status
from workspaces.models import PersistentWorkspace

WORKSPACES = registry.get("kruntimes.io", "v1alpha1", "persistentworkspaces")


def make_namespace(name: str) -> None:
    store.create(
        registry.for_model(Namespace),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        context=OPERATOR,
    )


def make_workspace(
    name: str,
    *,
    runtime: str = "bash",
    namespace: str = "default",
    labels: dict | None = None,
    **spec,
) -> PersistentWorkspace:
    store.create(
        WORKSPACES,
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "PersistentWorkspace",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"runtime": runtime, **spec},
        },
        namespace=namespace,
        context=OPERATOR,
    )
    return PersistentWorkspace.objects.get(namespace=namespace, name=name)


def fresh(ws: PersistentWorkspace) -> PersistentWorkspace:
    return PersistentWorkspace.objects.get(pk=ws.pk)


def bind(ws: PersistentWorkspace, pod: RuntimePod) -> PersistentWorkspace:
    """Bound to ``pod`` as the binding controller would write it."""
    ws = fresh(ws)
    status = workspace_status.bound(ws.status or {}, ws, pod.name, str(pod.uid), timezone.now())
    assert workspace_status.write(ws, status)
    return ws


def lose(ws: PersistentWorkspace, reason: str = "RuntimePodGone") -> PersistentWorkspace:
    """Lost: its pod went away (the binding controller's transition)."""
    ws = fresh(ws)
    status = workspace_status.lost(
        ws.status or {},
        reason,
        f"Runtime Pod {ws.bound_pod} no longer exists: its workspace data is gone",
        timezone.now(),
        ws.generation,
    )
    assert workspace_status.write(ws, status)
    return ws


def use(ws: PersistentWorkspace, when=None) -> PersistentWorkspace:
    ws = fresh(ws)
    assert workspace_status.write(
        ws, workspace_status.used(ws.status or {}, when or timezone.now())
    )
    return ws
