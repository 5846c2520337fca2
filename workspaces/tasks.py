"""Celery entry points of the workspaces app: thin wrappers that call the controllers."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from runtimed import protocol

from . import binding, cleanup, task_names


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile(namespace: str | None = None) -> dict:
    """Binding, then use tracking and cleanup, for one namespace (None: every namespace)."""
    now = timezone.now()
    if namespace is None:
        bound = binding.reconcile_all(now)
    else:
        bound = binding.reconcile_namespace(namespace, now)
    return {"binding": bound, **cleanup.reconcile(now, namespace)}


@shared_task(name=protocol.WORKSPACE_DELETED_TASK, ignore_result=True)
def workspace_deleted(payload: dict) -> bool:
    """The bound pod's runtimed deleted a workspace's bytes: release its finalizer."""
    return cleanup.confirm_deleted(payload)  # type: ignore[arg-type]
