"""Handing bound Runs to their pod's runtimed: a self-contained payload on ``runtimed.<pod>``.

A Run with ``spec.workspace`` carries its workspace's name in both its execute and its cancel
message: runtimed keeps that Run's directory in the workspace (``runtimed.persistent``).

Sending is retried by the periodic pass for every Scheduled Run not yet started, so a Run
bound while the broker was down is dispatched when it returns; runtimed ignores duplicates.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db.models import Q

from portal.machinery.validation import parse_duration
from runtimed import protocol
from scheduling.models import ACTIVE_PHASES, STOPPING, Run, RunPhase, Runtime

log = logging.getLogger(__name__)
EXECUTE_TASK = protocol.EXECUTE_RUN_TASK
CANCEL_TASK = protocol.CANCEL_RUN_TASK
REDISPATCH_AFTER = timedelta(seconds=10)
RESEND_CANCEL_AFTER = timedelta(seconds=10)


pod_queue = protocol.pod_queue


def identity(run: Run) -> protocol.Identity:
    """Which attempt of which Run, on which pod incarnation: what every message carries."""
    return {
        "run": {
            "namespace": run.namespace,
            "name": run.name,
            "uid": str(run.uid),
            "attempt": run.attempt,
        },
        "pod": {"name": run.assigned_pod, "uid": run.assigned_pod_uid},
    }


def workspace_ref(run: Run) -> protocol.WorkspaceRef | None:
    """The PersistentWorkspace the Run uses (spec.workspace.name), or None."""
    name = ((run.spec or {}).get("workspace") or {}).get("name")
    return {"name": name} if name else None


def cancel_payload(run: Run) -> protocol.CancelPayload:
    """The identity, and the Run's workspace (runtimed keeps the attempt's markers there)."""
    message: protocol.CancelPayload = {**identity(run)}
    if (workspace := workspace_ref(run)) is not None:
        message["workspace"] = workspace
    return message


def payload(run: Run, artifact_store: dict | None = None) -> protocol.ExecutePayload:
    """Everything runtimed needs, so it never asks back: the Run's execution inputs, the
    Runtime's artifact store (which runtimed echoes in its reports for cleanup) and, for a Run
    with spec.workspace, the PersistentWorkspace it runs in."""
    spec = run.spec or {}
    timeout = spec.get("timeout")
    message: protocol.ExecutePayload = {
        **identity(run),
        "source": spec.get("source") or {},
        "mode": spec.get("mode") or {},
        "env": [{"name": e["name"], "value": e.get("value", "")} for e in spec.get("env") or []],
        "timeoutSeconds": parse_duration(timeout) if timeout else None,
        "workingDir": None,
        "artifactStore": artifact_store,
        "artifactInputs": list(spec.get("artifactInputs") or []),
    }
    if (workspace := workspace_ref(run)) is not None:
        message["workspace"] = workspace
    return message


def _artifact_stores(runs: list[Run]) -> dict[tuple[str, str], dict | None]:
    keys = {(run.namespace, run.runtime) for run in runs}
    stores: dict[tuple[str, str], dict | None] = dict.fromkeys(keys)
    for namespace in {ns for ns, _ in keys}:
        names = [name for ns, name in keys if ns == namespace]
        for name, spec in Runtime.objects.filter(namespace=namespace, name__in=names).values_list(
            "name", "spec"
        ):
            stores[(namespace, name)] = (spec or {}).get("artifactStore")
    return stores


def _send(app, run: Run, artifact_store: dict | None) -> bool:
    try:
        app.send_task(
            EXECUTE_TASK,
            kwargs={"payload": payload(run, artifact_store)},
            queue=pod_queue(run.assigned_pod),
        )
        return True
    except Exception:  # noqa: BLE001 - the periodic pass sends it again
        log.warning(
            "could not dispatch Run %s/%s; will retry", run.namespace, run.name, exc_info=True
        )
        return False


def dispatch(run_pks: list[int], now: datetime, app=None) -> int:
    """Send the Scheduled Runs among ``run_pks`` to their pods; returns how many were sent."""
    if app is None:
        from portal.celery import app
    sent = []
    runs = list(Run.objects.filter(pk__in=run_pks, phase=RunPhase.SCHEDULED))
    stores = _artifact_stores(runs)
    for run in runs:
        if _send(app, run, stores[(run.namespace, run.runtime)]):
            sent.append(run.pk)
    Run.objects.filter(pk__in=sent).update(dispatched_at=now)
    return len(sent)


def hand_over(namespace: str, pod_name: str, pod_uid: str, now: datetime) -> int:
    """A restarted pod (same name and UID: its queue and disk kept) takes over the Scheduled
    Runs its last incarnation had not started: they count as handed to it now, so the grace
    before one is thought lost starts with the new process (re-sent if not started)."""
    return Run.objects.filter(
        namespace=namespace,
        assigned_pod=pod_name,
        assigned_pod_uid=pod_uid,
        phase=RunPhase.SCHEDULED,
    ).update(dispatched_at=now)


def redispatch(now: datetime, batch: int = 500, app=None) -> int:
    """The level-triggered half: Scheduled Runs never sent, or sent a while ago and not started."""
    due = (
        Run.objects.filter(
            Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=now - REDISPATCH_AFTER),
            phase=RunPhase.SCHEDULED,
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return dispatch(list(due[:batch]), now, app=app)


# --- confirming the reports runtimed repeats ----------------------------------------------


def confirm_reports(heartbeat: dict, reports: object, app=None) -> int:
    """Tell the pod which of the final reports its heartbeat repeated need no repeating: those
    whose Run no longer waits for that attempt on that pod (applied now or before, or the Run
    is gone). Returns how many were confirmed; a send that fails is retried next beat."""
    if not isinstance(reports, list) or not reports or not isinstance(heartbeat, dict):
        return 0
    keys = {}
    for report in reports:
        key = protocol.report_key(report) if isinstance(report, dict) else None
        if key is not None:
            keys[key] = report.get("podUID")
    uids = []
    for uid, _ in keys:
        try:
            uids.append(uuid.UUID(uid))
        except ValueError:
            continue
    waiting = {
        (str(uid), attempt, pod_uid)
        for uid, attempt, pod_uid in Run.objects.filter(
            uid__in=uids, phase__in=ACTIVE_PHASES
        ).values_list("uid", "attempt", "assigned_pod_uid")
    }
    done = [
        {"uid": uid, "attempt": attempt}
        for (uid, attempt), pod_uid in keys.items()
        if (uid, attempt, pod_uid) not in waiting
    ]
    if not done:
        return 0
    if app is None:
        from portal.celery import app
    pod = {"name": heartbeat.get("podName"), "uid": heartbeat.get("podUID")}
    try:
        app.send_task(
            protocol.CONFIRM_REPORTS_TASK,
            kwargs={"payload": {"pod": pod, "reports": done}},
            queue=pod_queue(str(pod["name"])),
        )
    except Exception:  # noqa: BLE001 - the next heartbeat repeats them; confirmed then
        log.warning("could not confirm reports to pod %s", pod["name"], exc_info=True)
        return 0
    return len(done)


# --- cancelling a bound Run ----------------------------------------------------------------


def send_cancels(run_pks: list[int], now: datetime, app=None) -> int:
    """Tell the pods of these bound Runs to kill (or never start) their attempt."""
    if app is None:
        from portal.celery import app
    sent = []
    for run in Run.objects.filter(STOPPING, pk__in=run_pks, phase__in=ACTIVE_PHASES):
        try:
            app.send_task(
                CANCEL_TASK,
                kwargs={"payload": cancel_payload(run)},
                queue=pod_queue(run.assigned_pod),
            )
            sent.append(run.pk)
        except Exception:  # noqa: BLE001 - resend_cancels sends it again
            log.warning(
                "could not send the cancel of Run %s/%s; will retry",
                run.namespace,
                run.name,
                exc_info=True,
            )
    Run.objects.filter(pk__in=sent).update(cancel_sent_at=now)
    return len(sent)


def resend_cancels(now: datetime, batch: int = 500, app=None) -> int:
    """The level-triggered half: stopping Runs still active a while after their cancel."""
    due = (
        Run.objects.filter(STOPPING, phase__in=ACTIVE_PHASES)
        .filter(Q(cancel_sent_at__isnull=True) | Q(cancel_sent_at__lt=now - RESEND_CANCEL_AFTER))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return send_cancels(list(due[:batch]), now, app=app)
