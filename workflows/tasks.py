"""Celery entry points of the workflows app: thin wrappers around the controller."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from portal.machinery import workqueue

from . import controller, task_names
from .models import WorkflowRun, WorkflowRunPhase
from .triggers import QUEUE


def reconcile_key(uid: str) -> bool:
    """The work queue's handler: one pass over the WorkflowRun of that UID, if it still is."""
    wfr = WorkflowRun.objects.filter(uid=uid).first()
    return wfr is not None and controller.reconcile(wfr, timezone.now())


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile(batch: int = 5000) -> int:
    """The beat pass (the resync): every unfinished WorkflowRun goes on the work queue."""
    active = (
        WorkflowRun.objects.filter(
            deletion_timestamp__isnull=True,
            phase__in=(WorkflowRunPhase.PENDING, WorkflowRunPhase.RUNNING),
        )
        .order_by("pk")
        .values_list("uid", flat=True)[:batch]
    )
    return workqueue.add_many(QUEUE, [str(uid) for uid in active])
