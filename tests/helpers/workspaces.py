"""PersistentWorkspaces in the database, created through the store as an operator would and
moved through their phases by the workspace status writer, as the controllers do."""

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


def workspace_manifest(
    name: str = "ws",
    runtime: str = "bash",
    *,
    labels: dict | None = None,
    ownerReferences: list | None = None,  # noqa: N803 - the manifest's own key
    **spec,
) -> dict:
    metadata: dict = {"name": name}
    if labels:
        metadata["labels"] = labels
    if ownerReferences:
        metadata["ownerReferences"] = ownerReferences
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "PersistentWorkspace",
        "metadata": metadata,
        "spec": {"runtime": runtime, **spec},
    }


def make_workspace(
    name: str = "ws",
    runtime: str = "bash",
    namespace: str = "default",
    *,
    labels: dict | None = None,
    ownerReferences: list | None = None,  # noqa: N803 - the manifest's own key
    **spec,
) -> PersistentWorkspace:
    return store.create(
        WORKSPACES,
        workspace_manifest(name, runtime, labels=labels, ownerReferences=ownerReferences, **spec),
        namespace=namespace,
        context=OPERATOR,
    )


def fresh_workspace(ws: PersistentWorkspace) -> PersistentWorkspace | None:
    return PersistentWorkspace.objects.filter(pk=ws.pk).first()


def make_namespace(name: str) -> None:
    store.create(
        registry.for_model(Namespace),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        context=OPERATOR,
    )


def bind(ws: PersistentWorkspace, pod: RuntimePod) -> PersistentWorkspace:
    """Bound to ``pod`` as the binding controller would write it."""
    ws = PersistentWorkspace.objects.get(pk=ws.pk)
    status = workspace_status.bound(ws.status or {}, ws, pod.name, str(pod.uid), timezone.now())
    assert workspace_status.write(ws, status)
    return ws


def lose(ws: PersistentWorkspace, reason: str = "RuntimePodGone") -> PersistentWorkspace:
    """Lost: its pod went away (the binding controller's transition)."""
    ws = PersistentWorkspace.objects.get(pk=ws.pk)
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
    """``lastUsedTime`` set, as the cleanup controller does when the last Run using it ends."""
    ws = PersistentWorkspace.objects.get(pk=ws.pk)
    status = workspace_status.used(ws.status or {}, when or timezone.now())
    assert workspace_status.write(ws, status)
    return ws
