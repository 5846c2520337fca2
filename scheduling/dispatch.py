"""Handing bound Runs to their pod's runtimed: a self-contained payload on ``runtimed.<pod>``.

Sending is retried by the periodic pass for every Scheduled Run not yet started, so a Run
bound while the broker was down is dispatched when it returns; runtimed ignores duplicates.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import Q

from portal.machinery.validation import parse_duration
from scheduling.models import Run, RunPhase

log = logging.getLogger(__name__)
EXECUTE_TASK = "runtimed.execute_run"
REDISPATCH_AFTER = timedelta(seconds=10)


def pod_queue(pod_name: str) -> str:
    return f"runtimed.{pod_name}"


def payload(run: Run) -> dict:
    spec = run.spec or {}
    timeout = spec.get("timeout")
    return {
        "run": {"namespace": run.namespace, "name": run.name, "uid": str(run.uid),
                "attempt": run.attempt},
        "pod": {"name": run.assigned_pod, "uid": run.assigned_pod_uid},
        "source": spec.get("source") or {},
        "mode": spec.get("mode") or {},
        "env": [{"name": e["name"], "value": e.get("value", "")} for e in spec.get("env") or []],
        "timeoutSeconds": parse_duration(timeout) if timeout else None,
        "workingDir": None,
    }


def _send(app, run: Run) -> bool:
    try:
        app.send_task(EXECUTE_TASK, kwargs={"payload": payload(run)},
                      queue=pod_queue(run.assigned_pod))
        return True
    except Exception:  # noqa: BLE001 - the periodic pass sends it again
        log.warning("could not dispatch Run %s/%s; will retry", run.namespace, run.name,
                    exc_info=True)
        return False


def dispatch(run_pks: list[int], now: datetime, app=None) -> int:
    """Send the Scheduled Runs among ``run_pks`` to their pods; returns how many were sent."""
    if app is None:
        from portal.celery import app
    sent = []
    for run in Run.objects.filter(pk__in=run_pks, phase=RunPhase.SCHEDULED):
        if _send(app, run):
            sent.append(run.pk)
    Run.objects.filter(pk__in=sent).update(dispatched_at=now)
    return len(sent)


def redispatch(now: datetime, batch: int = 500, app=None) -> int:
    """The level-triggered half: Scheduled Runs never sent, or sent a while ago and not started."""
    due = Run.objects.filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=now - REDISPATCH_AFTER),
                             phase=RunPhase.SCHEDULED).order_by("pk").values_list("pk", flat=True)
    return dispatch(list(due[:batch]), now, app=app)
