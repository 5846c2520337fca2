"""Celery entry points of the scheduling app: thin wrappers that load, call and save."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from portal.machinery import workqueue
from runtimed import protocol
from scheduling import (
    cleanup,
    dispatch,
    disruption,
    lifecycle,
    logs,  # also registers scheduling.append_log
    pods,
    runtime_status,
    task_names,
    triggers,
)
from scheduling.models import Run, RunPhase
from scheduling.scheduler import Framework, default_framework, run_pass

log = logging.getLogger(__name__)
# One framework per worker process, so its usage cache lives from one pass to the next.
_framework: Framework | None = None


def worker_framework() -> Framework:
    global _framework
    if _framework is None:
        _framework = default_framework()
    return _framework


def schedule_pending(key: str = triggers.KEY) -> workqueue.Requeue | None:
    """The scheduler's work queue handler: one pass over the Pending Runs (the queue runs
    another when a wake-up came meanwhile), their dispatch to the pods they were bound to,
    and a pass again when the soonest retry backoff ends (or at once after a lost bind)."""
    if not Run.objects.filter(phase=RunPhase.PENDING).exists():
        return None  # nothing to place: a wake-up after a Run ended costs one query, not a pass
    result = run_pass(worker_framework(), timezone.now())
    dispatch.dispatch(result.bound_runs, timezone.now())
    if result.conflicts:
        return workqueue.Requeue(after=0.0)
    return _next_retry(timezone.now())


def _next_retry(now: datetime) -> workqueue.Requeue | None:
    soonest = Run.objects.filter(phase=RunPhase.PENDING, not_before__gt=now).aggregate(
        at=Min("not_before")
    )["at"]
    if soonest is None:
        return None
    return workqueue.Requeue(after=(soonest - now).total_seconds())


class CleanupFailed(Exception):
    """The artifact store refused: the key is retried after its backoff."""


def clean_up_run(key: str) -> workqueue.Requeue | None:
    """The ``run-cleanup`` work queue handler: one deleted Run's artifacts and finalizer."""
    namespace, _, name = key.partition("/")
    run = Run.objects.filter(namespace=namespace, name=name).first()
    if run is None:
        return None
    outcome = cleanup.release(run)
    if outcome == cleanup.FAILED:
        raise CleanupFailed(f"the artifacts of Run {key} could not be deleted from their store")
    if outcome == cleanup.DEFERRED:
        return workqueue.Requeue(after=0.0)
    return None


@shared_task(name=protocol.REPORT_RUN_TASK, ignore_result=True)
def report_run(report: dict) -> bool:
    tail = report.pop("log", None)
    if isinstance(tail, dict):  # the attempt's last output, stored before the Run ends
        logs.append_chunk(tail, timezone.now())
    changed = lifecycle.apply_report(report, timezone.now())
    if (
        changed
        and report.get("phase") != protocol.Phase.RUNNING
        and lifecycle.runs_wait_for_capacity(timezone.now())
    ):
        triggers.request_scheduling("run")  # capacity was freed
    return changed


@shared_task(name=protocol.HEARTBEAT_TASK, ignore_result=True)
def runtime_pod_heartbeat(heartbeat: dict) -> None:
    # the final reports runtimed still owes first (even from a stale beat: they are facts),
    # so the active Runs it lists next never make a finished Run look lost
    reports = heartbeat.get("recentReports")
    if lifecycle.apply_missed_reports(reports, timezone.now()):
        triggers.request_scheduling("run")
    dispatch.confirm_reports(heartbeat, reports)
    pod, became_ready = pods.record_heartbeat(heartbeat, timezone.now())
    if pod is None:
        return
    if became_ready:
        runtime_status.sync_runtime_status(timezone.now(), pod.namespace, pod.runtime)


@shared_task(name=task_names.RECONCILE, ignore_result=True)
def reconcile() -> dict:
    """The beat pass: pod readiness, lost pods and executions, undelivered dispatches."""
    now = timezone.now()
    resumed = disruption.note_pass(now, settings.KRUNTIMES_RECONCILE_INTERVAL_SECONDS)
    result = {
        **pods.reconcile_pods(now, resumed),
        **lifecycle.reconcile_runs(now, resumed=resumed),
        "redispatched": dispatch.redispatch(now),
        "cancels": dispatch.resend_cancels(now),
        "runtimes": runtime_status.sync_runtime_status(now),
    }
    triggers.request_scheduling("beat")
    return result


@shared_task(name=task_names.COLLECT_RUNS, ignore_result=True)
def collect_runs(expire_after: int = 0, release_after: int = 0) -> dict:
    """One batch of TTL deletions and of artifact cleanups; re-enqueued while work remains."""
    batch = settings.KRUNTIMES_GC_BATCH_SIZE
    expired = (
        cleanup.expire_finished(timezone.now(), batch, expire_after)
        if expire_after >= 0
        else cleanup.Progress()
    )
    released = (
        cleanup.release_deleted(batch, release_after) if release_after >= 0 else cleanup.Progress()
    )
    if expired.resume_after is not None or released.resume_after is not None:
        # -1: that half is done; only the unfinished half resumes
        collect_runs.apply_async(
            args=(
                -1 if expired.resume_after is None else expired.resume_after,
                -1 if released.resume_after is None else released.resume_after,
            ),
            queue=protocol.CONTROL_QUEUE,
        )
    return {
        "expired": expired.expired,
        "cleaned": released.cleaned,
        "waiting": released.waiting,
        "failed": released.failed,
    }
