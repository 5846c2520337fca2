"""Wake the workspace controller: each event adds the namespace to its work queue
(``portal.machinery.workqueue``: the controller reconciles a namespace's workspaces against
one read of its pods, so wake-ups of a waiting namespace merge into one pass). A workspace
written, a Runtime Pod changed, a Run that uses a workspace started or ended; beat's pass adds
every namespace with workspaces (the resync)."""

from __future__ import annotations

from portal.machinery import workqueue

QUEUE = "workspaces"


def request_reconcile(namespace: str | None = None) -> None:
    """Reconcile the workspaces of ``namespace`` (None: of every namespace that has any)."""
    if namespace is not None:
        workqueue.add(QUEUE, namespace)
    else:
        workqueue.add_many(QUEUE, namespaces())


def namespaces() -> list[str]:
    from .models import PersistentWorkspace

    return list(PersistentWorkspace.objects.values_list("namespace", flat=True).distinct())


def on_workspace_change(ws, event: str) -> None:
    """New, gone (a Runtime it held may go now), or asked something new (spec, labels,
    finalizers, a deletion): the controller's own status writes do not wake it again."""
    if event in ("ADDED", "DELETED") or (event == "MODIFIED" and ws.desired_changed):
        request_reconcile(ws.namespace)


def on_runtime_change(runtime, event: str) -> None:
    """A watcher of the Runtime kind: a Runtime being deleted waits while Retain workspaces
    hold data on its pods (``retention``), and no new workspace binds to it."""
    if event == "MODIFIED" and runtime.deletion_timestamp is not None:
        request_reconcile(runtime.namespace)


def on_pod_change(pod, event: str) -> None:
    """A watcher of the RuntimePod kind: a pod came, went, or changed readiness, phase or
    capacity; the namespace's workspaces are bound against its pods."""
    request_reconcile(pod.namespace)


def on_run_change(run, event: str) -> None:
    """A watcher of the Run kind: a Run that references a workspace was created, deleted, or
    moved phase (started or ended): the workspace's use (lastUsedTime) may have changed."""
    if (run.spec or {}).get("workspace") and (event != "MODIFIED" or run.phase_changed):
        request_reconcile(run.namespace)
