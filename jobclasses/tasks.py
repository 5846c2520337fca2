"""Entry points of the jobclasses app: the work queue handlers (one Job, one class) and beat's
resync, which adds every key the controllers own."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from portal.machinery import workqueue

from . import class_controller, job_controller, task_names, triggers
from .models import Job, JobClass, JobPhase


def reconcile_class_key(key: str) -> int:
    """One JobClass's Accepted/Ready and finalizers ("": every class, and the parameters being
    deleted)."""
    return class_controller.reconcile_all(timezone.now(), key or None)


def reconcile_job_key(key: str) -> workqueue.Requeue | None:
    """One Job, moved as far as it can go; a scheduled or running one is observed again after
    ``KRUNTIMES_JOB_POLL_SECONDS``."""
    namespace, _, name = key.partition("/")
    job = Job.objects.filter(namespace=namespace, name=name).first()
    if job is None:
        return None
    job_controller.reconcile(job, timezone.now())
    if job_controller.needs_poll(job):
        return workqueue.Requeue(after=float(settings.KRUNTIMES_JOB_POLL_SECONDS))
    return None


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile() -> int:
    """Beat: the resync. Every class, and every Job not finished or being deleted, is added
    to its work queue (what a crash or an outage lost is reconciled now)."""
    classes = [triggers.ALL_CLASSES, *JobClass.objects.values_list("name", flat=True)]
    jobs = Job.objects.exclude(
        phase__in=(JobPhase.SUCCEEDED, JobPhase.FAILED), deletion_timestamp__isnull=True
    ).values_list("namespace", "name")
    return workqueue.add_many(triggers.CLASSES, classes) + workqueue.add_many(
        triggers.JOBS, (triggers.job_key(ns, name) for ns, name in jobs)
    )
