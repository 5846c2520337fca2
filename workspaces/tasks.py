"""Celery entry points of the workspaces app: thin wrappers that call the controllers."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from portal.machinery import workqueue
from runtimed import protocol

from . import binding, cleanup, retention, task_names, triggers
from .triggers import QUEUE


def reconcile_namespace(namespace: str) -> dict:
    """The work queue's handler: binding, then use tracking and cleanup, then the Runtimes
    that hold Retain workspaces, for one namespace."""
    now = timezone.now()
    bound = binding.reconcile_namespace(namespace, now)
    counts = cleanup.reconcile(now, namespace)
    return {"binding": bound, **counts, "retention": retention.reconcile_namespace(namespace, now)}


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile() -> int:
    """The beat pass (the resync): every namespace with workspaces goes on the work queue."""
    return workqueue.add_many(QUEUE, triggers.namespaces())


@shared_task(name=protocol.WORKSPACE_DELETED_TASK, ignore_result=True)
def workspace_deleted(payload: dict) -> bool:
    """The bound pod's runtimed deleted a workspace's bytes: release its finalizer."""
    return cleanup.confirm_deleted(payload)  # type: ignore[arg-type]
