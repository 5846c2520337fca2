"""Wake the jobclasses controllers after a commit. The beat pass heals whatever an event
missed (and observes running executions between the polls)."""

from __future__ import annotations

from django.conf import settings

from portal.machinery.events import send_on_commit

from . import task_names


def request_class_reconcile(name: str | None = None) -> None:
    send_on_commit(task_names.RECONCILE_CLASSES, name)


def request_job_reconcile(namespace: str, name: str, *, poll: bool = False) -> None:
    """One Job; ``poll``: the follow-up observation of a running execution, a few seconds on."""
    if poll:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            return  # an eager poll would run at once, forever: beat (or the test) observes
        send_on_commit(
            task_names.RECONCILE_JOB,
            namespace,
            name,
            True,
            countdown=settings.KRUNTIMES_JOB_POLL_SECONDS,
        )
    else:
        send_on_commit(task_names.RECONCILE_JOB, namespace, name)


def request_waiting_jobs(namespace: str | None = None, job_class: str | None = None) -> None:
    """Jobs not yet running that may now move: in a namespace, or waiting on a class."""
    send_on_commit(task_names.RECONCILE_JOBS, namespace, job_class)


def on_job_class_change(job_class, event: str) -> None:
    request_class_reconcile(job_class.name)
    if event != "DELETED":
        request_waiting_jobs(job_class=job_class.name)


def on_parameters_change(parameters, event: str) -> None:
    request_class_reconcile()


def on_job_change(job, event: str) -> None:
    if event in ("ADDED", "MODIFIED"):
        request_job_reconcile(job.namespace, job.name)
    if event == "DELETED" and job.job_class:
        request_class_reconcile(job.job_class)


def on_namespace_change(namespace, event: str) -> None:
    """A namespace's labels or default-class annotation changed: its waiting Jobs re-check."""
    if event == "MODIFIED":
        request_waiting_jobs(namespace=namespace.name)


def on_config_change(obj, event: str) -> None:
    """A Secret or ConfigMap a waiting Job references may have appeared."""
    request_waiting_jobs(namespace=obj.namespace)
