"""Celery entry points of the scheduling app: thin wrappers that load, call and save."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from scheduling import dispatch, lifecycle, pods, runtimes, triggers
from scheduling.scheduler import default_framework, lease, run_pass

log = logging.getLogger(__name__)
LEASE_TTL = timedelta(seconds=60)
MAX_PASSES = 50


@shared_task(name="scheduling.schedule", ignore_result=True)
def schedule(source: str = "event") -> int:
    """Run scheduling passes while wake-ups keep arriving; only the lease holder runs."""
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    lease.request_pass(timezone.now())
    if not lease.acquire(holder, timezone.now(), LEASE_TTL):
        return 0  # the holder sees our request and runs another pass
    bound = 0
    framework = default_framework()
    try:
        for _ in range(MAX_PASSES):
            started = timezone.now()
            result = run_pass(framework, started)
            bound += result.bound
            dispatch.dispatch(result.bound_runs, timezone.now())
            if not lease.requested_since(started):
                break
            lease.acquire(holder, timezone.now(), LEASE_TTL)  # renew
    finally:
        lease.release(holder)
    return bound


@shared_task(name="scheduling.report_run", ignore_result=True)
def report_run(report: dict) -> bool:
    changed = lifecycle.apply_report(report, timezone.now())
    if changed and report.get("phase") != "Running":
        triggers.request_scheduling("run")  # capacity was freed
    return changed


@shared_task(name="scheduling.runtime_pod_heartbeat", ignore_result=True)
def runtime_pod_heartbeat(heartbeat: dict) -> None:
    pod, became_ready = pods.record_heartbeat(heartbeat, timezone.now())
    if became_ready:
        runtimes.sync_runtime_status(timezone.now(), pod.namespace, pod.runtime)
        triggers.request_scheduling("pod")


@shared_task(name="scheduling.reconcile", ignore_result=True)
def reconcile() -> dict:
    """The beat pass: pod readiness, lost pods and executions, undelivered dispatches."""
    now = timezone.now()
    result = {**pods.reconcile_pods(now), **lifecycle.reconcile_runs(now),
              "redispatched": dispatch.redispatch(now),
              "runtimes": runtimes.sync_runtime_status(now)}
    triggers.request_scheduling("beat")
    return result
