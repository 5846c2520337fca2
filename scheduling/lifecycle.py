"""The Run lifecycle after Bind: reports from runtimed, lost pods and lost executions.

Everything here is idempotent and level-triggered: a duplicate or late report changes
nothing, and the periodic pass fails Runs whose pod is gone (PodGone) or whose runtimed no
longer executes them (ExecutionLost), so no Run stays Running forever. An attempt that fails
for a retryable reason (``scheduling.retry``) makes the Run Pending again for the next one.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db.models import Q

from portal.machinery.conditions import CONDITION_REASON_RE, MAX_REASON_LENGTH, time_or_none
from runtimed.protocol import Phase, Reason
from scheduling import disruption, endpoints, metrics, retry, run_events, run_status, triggers
from scheduling.disruption import Silence
from scheduling.models import ACTIVE_PHASES, PodPhase, Run, RunPhase, RuntimePod

log = logging.getLogger(__name__)
TERMINAL_REPORTS = {RunPhase.SUCCEEDED, RunPhase.FAILED, RunPhase.TIMEOUT, RunPhase.CANCELLED}
POD_SILENT_GONE_AFTER = timedelta(seconds=20)
EXECUTION_GRACE = timedelta(seconds=10)
UNSTARTED_GRACE = timedelta(seconds=60)
LOST_REASONS = Reason.LOST


def end_attempt(
    run: Run,
    phase: str,
    reason: str,
    message: str,
    now: datetime,
    *,
    status: dict | None = None,
    **finish,
) -> tuple[dict, dict]:
    """The status and columns after the current attempt ended: the next attempt after its
    backoff when the retry policy allows one, else the Run's terminal phase."""
    status = run.status if status is None else status
    reason = reason or (phase if phase != RunPhase.SUCCEEDED else "")
    if phase in (RunPhase.FAILED, RunPhase.TIMEOUT) and retry.should_retry(
        run.spec, reason, run.attempt, cancel_requested=run.is_stopping
    ):
        delay = retry.backoff(run.spec, run.attempt)
        new = run_status.retrying(
            status, reason, message, now, run.generation, delay_seconds=delay.total_seconds()
        )
        return new, {"not_before": now + delay, "dispatched_at": None, "cancel_sent_at": None}
    new = run_status.finished(status, phase, reason, message, now, run.generation, **finish)
    return new, {"not_before": None}


def write_end(run: Run, phase: str, reason: str, message: str, now: datetime, **finish) -> bool:
    """Apply :func:`end_attempt`; a retry wakes the scheduler when its backoff is over."""
    status, columns = end_attempt(run, phase, reason, message, now, **finish)
    if not run_status.write(run, status, **columns):
        return False
    retried = bool(columns.get("not_before"))
    run_events.attempt_ended(
        run,
        reason,
        retried,
        (columns["not_before"] - now).total_seconds() if retried else None,
    )
    metrics.ATTEMPTS_ENDED.labels(
        phase,
        metrics.attempt_reason(
            reason or (Phase.SUCCEEDED if phase == RunPhase.SUCCEEDED else phase)
        ),
        "true" if retried else "false",
    ).inc()
    if retried:
        triggers.request_scheduling("retry", eta=columns["not_before"])
    return True


def _report_status(run: Run, report: dict, now: datetime) -> dict | None:
    """The new status for a report, or None when it changes nothing (duplicate, late, stale)."""
    if run.is_terminal:
        return None
    if (
        str(run.uid) != report.get("uid")
        or run.attempt != int(report.get("attempt") or 0)
        or run.assigned_pod_uid != report.get("podUID")
    ):
        return None  # a report about another attempt or another pod incarnation
    phase = report.get("phase")
    if phase == RunPhase.RUNNING:
        if run.phase != RunPhase.SCHEDULED:
            return None
        return _with_store(
            run_status.running(run.status, report.get("startTime"), now, run.generation), report
        )
    if phase == RunPhase.READY:
        if run.phase not in (RunPhase.SCHEDULED, RunPhase.RUNNING) or not run.is_function:
            return None
        published = endpoints.endpoint(run.namespace, run.name, str(run.uid))
        message = str(report.get("message") or "") if published else endpoints.NO_TLS
        return _with_store(
            run_status.ready(
                run.status, report.get("startTime"), now, run.generation, published, message
            ),
            report,
        )
    if phase in TERMINAL_REPORTS:
        status = _with_store(dict(run.status), report)
        if report.get("startTime") and not status.get("startTime"):
            status["startTime"] = report["startTime"]
        return status
    log.warning("ignoring a report with unknown phase %r", phase)
    return None


def _reported_reason(report: dict) -> tuple[str, str]:
    """The report's reason when it is a valid condition reason; else RuntimeError, saying so."""
    reason, message = report.get("reason") or "", str(report.get("message") or "")
    if not reason or (
        isinstance(reason, str)
        and len(reason) <= MAX_REASON_LENGTH
        and CONDITION_REASON_RE.fullmatch(reason)
    ):
        return reason, message
    return (
        Reason.RUNTIME_ERROR,
        f"runtimed reported an invalid reason {str(reason)[:64]!r}: {message}",
    )


def _with_store(status: dict, report: dict) -> dict:
    """Keep the store the attempt used: the artifact-cleanup finalizer deletes from it."""
    if isinstance(report.get("artifactStore"), dict):
        status["artifactStore"] = report["artifactStore"]
    return status


def _apply(run: Run, report: dict, status: dict, now: datetime) -> bool:
    if report.get("phase") in (RunPhase.RUNNING, RunPhase.READY):
        return run_status.write(run, status)
    outputs = report.get("outputs") if isinstance(report.get("outputs"), dict) else None
    refs = report.get("artifactRefs") if isinstance(report.get("artifactRefs"), list) else None
    reason, message = _reported_reason(report)
    return write_end(
        run,
        report["phase"],
        reason,
        message,
        now,
        status=status,
        exit_code=report.get("exitCode"),
        completion=report.get("completionTime"),
        outputs=outputs,
        artifact_refs=refs,
    )


def apply_report(report: dict, now: datetime, attempts: int = 3) -> bool:
    """Apply one runtimed report; True when it changed the Run."""
    try:
        uid = uuid.UUID(str(report.get("uid")))
    except ValueError:
        log.warning("ignoring a report with a malformed uid %r", report.get("uid"))
        return False
    for _ in range(attempts):
        run = Run.objects.filter(
            namespace=report.get("namespace"), name=report.get("name"), uid=uid
        ).first()
        if run is None:
            return False
        status = _report_status(run, report, now)
        if status is None:
            note_if_late(run, report)
            return False
        if _apply(run, report, status, now):
            return True
    log.warning(
        "report for %s/%s lost %d write races",
        report.get("namespace"),
        report.get("name"),
        attempts,
    )
    return False


def note_if_late(run: Run, report: dict) -> bool:
    """A final report for an attempt the control plane already ended otherwise is recorded as
    what really happened (a warning and ``kruntimes_run_late_reports_total``); it never starts
    another attempt. Cases: the attempt was failed as lost (PodGone, PodUnhealthy, ...) though
    it ended, or a later attempt already exists although this one succeeded."""
    phase, attempt = report.get("phase"), report.get("attempt")
    if (
        phase not in TERMINAL_REPORTS
        or str(run.uid) != report.get("uid")
        or not isinstance(attempt, int)
    ):
        return False
    reason = (run.status or {}).get("reason", "")
    if attempt == run.attempt and run.is_terminal and reason in LOST_REASONS and phase != run.phase:
        ended_as = reason
    elif attempt < run.attempt and phase == RunPhase.SUCCEEDED:
        ended_as = "superseded"
    else:
        return False  # a duplicate of what is recorded, or a failure that was retried
    metrics.LATE_REPORTS.labels(phase, ended_as).inc()
    log.warning(
        "late report: Run %s/%s attempt %s really ended %s (%s), but it had been "
        "ended as %s; the Run is left as it is",
        run.namespace,
        run.name,
        attempt,
        phase,
        report.get("reason") or "",
        ended_as,
    )
    return True


def runs_wait_for_capacity(now: datetime) -> bool:
    """Whether a Pending Run was found unplaceable (or is due after its backoff): only those
    need a pass when capacity frees up; a Run not yet considered has its own wake-up."""
    return (
        Run.objects.filter(
            Q(not_before__isnull=True) | Q(not_before__lte=now),
            phase=RunPhase.PENDING,
            deletion_timestamp__isnull=True,
        )
        .exclude(Q(status__message__isnull=True) | Q(status__message=""))
        .exists()
    )


def apply_missed_reports(reports: object, now: datetime) -> int:
    """Apply the final reports a heartbeat repeats whose Run still waits for one (one query
    finds them; the rest were applied long ago). Returns how many changed a Run."""
    if not isinstance(reports, list):
        return 0
    by_uid = {}
    for report in reports:
        try:
            by_uid[uuid.UUID(str(report.get("uid")))] = report
        except (AttributeError, ValueError):
            continue
    waiting = set(
        Run.objects.filter(uid__in=list(by_uid), phase__in=ACTIVE_PHASES).values_list(
            "uid", flat=True
        )
    )
    applied = 0
    for uid in waiting:
        if apply_report(by_uid[uid], now):
            log.warning("applied a report for Run %s that only a heartbeat brought", uid)
            applied += 1
    # the others changed nothing: a late one among them is still recorded as what happened
    for run in Run.objects.filter(uid__in=[uid for uid in by_uid if uid not in waiting]):
        note_if_late(run, by_uid[run.uid])
    return applied


def fail(run: Run, reason: str, message: str, now: datetime) -> bool:
    """The control plane ends the attempt Failed (PodGone, ExecutionLost); it may be retried."""
    return write_end(run, RunPhase.FAILED, reason, message, now)


def _since(run: Run) -> datetime | None:
    """When the Run entered its phase: startTime once running, else the Scheduled transition."""
    if run.phase == RunPhase.SCHEDULED:
        stamp = next(
            (
                c.get("lastTransitionTime")
                for c in run.status.get("conditions") or []
                if c.get("type") == "Scheduled"
            ),
            None,
        )
    else:
        stamp = run.status.get("startTime")
    return time_or_none(stamp)


def _lost_execution(run: Run, pod: RuntimePod) -> bool:
    """The pod keeps heartbeating but does not list this Run (attempt) as active: Running past
    a short grace, or Scheduled (re-dispatched meanwhile) for longer than a start can take."""
    if pod.last_heartbeat is None:
        return False
    since = _since(run)
    grace = UNSTARTED_GRACE if run.phase == RunPhase.SCHEDULED else EXECUTION_GRACE
    if run.phase == RunPhase.SCHEDULED and run.dispatched_at is not None:
        # counted from the last hand-over (a restarted pod takes its queue over when it starts)
        since = max(since, run.dispatched_at) if since is not None else run.dispatched_at
    if since is None or pod.last_heartbeat < since + grace:
        return False
    active = {(r.get("uid"), int(r.get("attempt") or 0)) for r in pod.active_runs or []}
    return (str(run.uid), run.attempt) not in active


def _lost_reason(run: Run, pod: RuntimePod | None, silence: Silence) -> tuple[str, str] | None:
    """Why an active Run can no longer finish on its pod, or None while it still can (or
    while its pod's silence may be the control plane's own fault: ``disruption``)."""
    if pod is None or str(pod.uid) != run.assigned_pod_uid:
        return Reason.POD_GONE, "the Runtime Pod this Run was bound to is gone"
    silent = silence.is_silent(pod.last_heartbeat)
    lost = not silent and _lost_execution(run, pod)
    if silent and not silence.counts_against(pod.namespace):
        return None  # most pods went quiet at once: wait for them to be heard from again
    if pod.phase == PodPhase.TERMINATING and (silent or lost):
        return Reason.POD_TERMINATING, "the Runtime Pod this Run was bound to is shutting down"
    if silent:
        return (
            Reason.POD_UNHEALTHY,
            "the Runtime Pod this Run was bound to stopped sending heartbeats",
        )
    if lost:
        return Reason.EXECUTION_LOST, "runtimed on the Runtime Pod is no longer executing this Run"
    return None


def reconcile_runs(
    now: datetime, batch: int = 1000, resumed: datetime | None = None
) -> dict[str, int]:
    """End (or retry) active Runs whose pod is gone, terminating or silent, or whose runtimed
    no longer executes them; ``resumed`` is when the control plane last came back from a gap
    (silence before it is not the pods' fault)."""
    counts = dict.fromkeys(LOST_REASONS, 0)
    pods = {(p.namespace, p.name): p for p in RuntimePod.objects.all()}
    silence = disruption.assess(pods.values(), now, POD_SILENT_GONE_AFTER, resumed)
    active = Run.objects.filter(phase__in=ACTIVE_PHASES).order_by("pk")
    for run in active[:batch]:
        lost = _lost_reason(run, pods.get((run.namespace, run.assigned_pod)), silence)
        if lost is not None:
            counts[lost[0]] += fail(run, *lost, now)
    return counts


def fail_runs_on_pod(
    namespace: str,
    pod_name: str,
    pod_uid: str,
    reason: str,
    message: str,
    now: datetime,
    phases: tuple[str, ...] = ACTIVE_PHASES,
) -> int:
    """A provider saw the pod end: its active Runs (those in ``phases``) end (or retry) now,
    not at the next pass."""
    runs = Run.objects.filter(
        namespace=namespace,
        assigned_pod=pod_name,
        assigned_pod_uid=pod_uid,
        phase__in=phases,
    )
    return sum(fail(run, reason, message, now) for run in runs)
