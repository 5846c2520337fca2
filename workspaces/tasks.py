"""Celery entry points of the workspaces app: thin wrappers that call the controllers."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

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
