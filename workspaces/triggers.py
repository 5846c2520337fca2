"""Wake the workspace controller after a commit: a workspace written, a Runtime Pod changed, a
Run that uses a workspace started or ended. The beat pass heals whatever an event missed."""

from __future__ import annotations

from portal.machinery.events import send_on_commit

from . import task_names


def request_reconcile(namespace: str | None = None) -> None:
    send_on_commit(task_names.RECONCILE, namespace)


def on_workspace_change(ws, event: str) -> None:
    if event in ("ADDED", "MODIFIED"):
        request_reconcile(ws.namespace)


def on_pods_changed(sender=None, namespace: str | None = None, **_) -> None:
    request_reconcile(namespace)


def on_run_change(run, event: str) -> None:
    """A Run that references a workspace: its use (lastUsedTime) may have changed."""
    if (run.spec or {}).get("workspace"):
        request_reconcile(run.namespace)
