"""Celery entry points of the jobclasses app: thin wrappers around the controllers."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from . import class_controller, job_controller, task_names
from .models import Job, JobPhase


@shared_task(name=task_names.RECONCILE_CLASSES, ignore_result=True)
def reconcile_classes(name: str | None = None) -> int:
    """Accepted/Ready of every JobClass (or one), and the protective finalizers."""
    return class_controller.reconcile_all(timezone.now(), name)


@shared_task(name=task_names.RECONCILE_JOB, ignore_result=True)
def reconcile_job(namespace: str, name: str, poll: bool = False) -> int:
    now = timezone.now()
    return sum(
        job_controller.reconcile(job, now, poll=poll)
        for job in Job.objects.filter(namespace=namespace, name=name)
    )


@shared_task(name=task_names.RECONCILE_JOBS, ignore_result=True)
def reconcile_jobs(namespace: str | None = None, job_class: str | None = None) -> int:
    """The beat pass (no arguments): every Job not finished or being deleted. With a namespace
    or a class: the Jobs there that wait to be accepted or scheduled."""
    now = timezone.now()
    jobs = Job.objects.exclude(phase__in=(JobPhase.SUCCEEDED, JobPhase.FAILED))
    if namespace is None and job_class is None:
        jobs = Job.objects.exclude(
            phase__in=(JobPhase.SUCCEEDED, JobPhase.FAILED), deletion_timestamp__isnull=True
        )
    else:
        jobs = jobs.filter(phase=JobPhase.PENDING)
        if namespace is not None:
            jobs = jobs.filter(namespace=namespace)
        if job_class is not None:
            jobs = jobs.filter(job_class__in=(job_class, ""))
    return sum(job_controller.reconcile(job, now) for job in jobs.iterator())


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile() -> int:
    """Beat: classes first (a Job's acceptance reads their conditions), then Jobs."""
    return reconcile_classes() + reconcile_jobs()
