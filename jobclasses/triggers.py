"""Wake the jobclasses controllers: each event adds keys to their work queues
(``portal.machinery.workqueue``): a Job's ``namespace/name`` to ``jobs``, a JobClass's name to
``jobclasses`` ("" for every class and the parameters being deleted). Wake-ups of a waiting key
merge into one reconcile, one worker reconciles a key at a time, and a running Job is
requeued to be observed again every ``KRUNTIMES_JOB_POLL_SECONDS``. Beat resyncs."""

from __future__ import annotations

from portal.machinery import workqueue

JOBS = "jobs"
CLASSES = "jobclasses"
ALL_CLASSES = ""  # every class, and every parameters object being deleted


def job_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def request_class_reconcile(name: str | None = None) -> None:
    workqueue.add(CLASSES, ALL_CLASSES if name is None else name)


def request_job_reconcile(namespace: str, name: str) -> None:
    workqueue.add(JOBS, job_key(namespace, name))


def request_waiting_jobs(namespace: str | None = None, job_class: str | None = None) -> None:
    """Jobs not yet running that may now move: in a namespace, or waiting on a class."""
    from .models import Job, JobPhase

    jobs = Job.objects.filter(phase=JobPhase.PENDING)
    if namespace is not None:
        jobs = jobs.filter(namespace=namespace)
    if job_class is not None:
        jobs = jobs.filter(job_class__in=(job_class, ""))
    keys = [job_key(ns, name) for ns, name in jobs.values_list("namespace", "name")]
    workqueue.add_many(JOBS, keys)


def on_job_class_change(job_class, event: str) -> None:
    """New, changed or deleted: the class is reconciled (its own status writes, Accepted and
    Ready, do not wake it again) and the Jobs waiting on it re-check (a class that became
    Ready is one of these status writes)."""
    if event != "MODIFIED" or job_class.desired_changed:
        request_class_reconcile(job_class.name)
    if event != "DELETED":
        request_waiting_jobs(job_class=job_class.name)


def on_parameters_change(parameters, event: str) -> None:
    request_class_reconcile()


def on_job_change(job, event: str) -> None:
    """New, changed, deleted: the controller's own status writes do not wake it again."""
    if event == "ADDED" or (event == "MODIFIED" and job.desired_changed):
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
