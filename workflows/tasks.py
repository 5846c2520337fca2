"""Celery entry points of the workflows app: thin wrappers around the controller."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from . import controller, task_names
from .models import WorkflowRun


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile(namespace: str | None = None, name: str | None = None, uid: str | None = None):
    """One WorkflowRun (by namespace/name or uid), or every active one (the beat pass)."""
    now = timezone.now()
    if name is None and uid is None:
        return controller.reconcile_active(now)
    runs = (
        WorkflowRun.objects.filter(uid=uid)
        if uid
        else WorkflowRun.objects.filter(namespace=namespace, name=name)
    )
    return sum(controller.reconcile(wfr, now) for wfr in runs)
