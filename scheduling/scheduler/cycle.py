"""One scheduling pass: snapshot, then each pending Run in queue order through the framework,
Assume, and Bind in batches. Runs that cannot be placed get a bounded Pending message
(written only when it changes); Runs that can never be placed end Failed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from portal.machinery import history
from runtimed.protocol import Reason
from scheduling import metrics, run_events, run_status
from scheduling.models import RunPhase

from . import bind as binding
from .framework import REASON_TEXT, Framework, Verdict
from .loading import SQL_SELECTORS_PER_PASS, Cursor, pending_page, take_snapshot
from .snapshot import PendingRun, PodState, Snapshot


@dataclass
class PassResult:
    considered: int = 0
    bound: int = 0
    pending: int = 0
    failed: int = 0
    cancelled: int = 0
    conflicts: int = 0
    parked: int = 0  # of the pending: left as they were, nothing they wait for changed
    bound_runs: list[int] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class PassOptions:
    page_size: int = 2000
    bind_batch: int = 500
    write_pending_messages: bool = True
    sql_selectors: int = SQL_SELECTORS_PER_PASS  # then a namespace's placed Runs are read


def _write_status(run: PendingRun, status: dict[str, Any]) -> bool:
    """A Pending Run's status (a stale write loses, the next pass retries)."""
    return run_status.write(run, status, run_status.STILL_PENDING)


# a reason's singular and plural text -> its key
_REASON_OF_TEXT = {text: key for key, texts in REASON_TEXT.items() for text in texts}


def reason_set(message: str) -> frozenset[str]:
    """What a Pending message says, without its counts: ``0/3 pods: 2 at capacity, 1 is not
    ready`` -> {"AtCapacity", "NotReady"}; any other message is its own reason."""
    head, _, reasons = message.partition(": ")
    if not reasons or not head.startswith("0/"):
        return frozenset([message])
    texts = (part.lstrip("0123456789 ") for part in reasons.split(", "))
    return frozenset(_REASON_OF_TEXT.get(text, text) for text in texts)


def pending_status(run: PendingRun, message: str, now: datetime) -> dict[str, Any] | None:
    """The Unschedulable status to write, or None when the Run already says the same reasons
    (counts change as pods fill and drain: rewriting them each pass would write every
    waiting Run every pass)."""
    scheduled: dict[str, Any] = next(
        (c for c in run.status.get("conditions") or [] if c.get("type") == "Scheduled"), {}
    )
    if scheduled.get("reason") == "Unschedulable" and reason_set(
        run.status.get("message") or ""
    ) == reason_set(message):
        return None
    return run_status.pending(run.status, message, now, run.generation)


def _fail(run: PendingRun, verdict: Verdict, now: datetime) -> None:
    _write_status(
        run,
        run_status.finished(
            run.status, RunPhase.FAILED, verdict.reason, verdict.message, now, run.generation
        ),
    )


def _cancel(run: PendingRun, now: datetime) -> None:
    _write_status(
        run,
        run_status.finished(
            run.status,
            RunPhase.CANCELLED,
            Reason.CANCELLED,
            "cancelled before it was scheduled",
            now,
            run.generation,
        ),
    )


class Pass:
    def __init__(self, framework: Framework, now: datetime, options: PassOptions) -> None:
        self.framework = framework
        self.now = now
        self.options = options
        self.result = PassResult()
        self.batch: list[tuple[PendingRun, PodState]] = []
        # Pending messages to write, in one statement when the pass ends
        self.pending_writes: list[tuple[PendingRun, dict[str, Any]]] = []
        # what this scheduler's binds left on each pod (a bind re-reads only what moved)
        self.ledger = framework.ledger if framework.ledger is not None else binding.PodLedger()

    def run(self) -> PassResult:
        started = time.perf_counter()
        parking, cache = self.framework.parking, self.framework.usage_cache
        # the cluster's version before what the decisions rest on is read (the usage cache
        # reads it first thing in the snapshot)
        version = history.current() if parking is not None and cache is None else 0
        snapshot = take_snapshot(
            self.now, self.options.sql_selectors, cache, self.framework.pod_cache
        )
        if len(self.ledger.pods) > 2 * len(snapshot.pods_by_key):
            self.ledger.pods.clear()  # mostly pods that went: bounded by the pods there are
        if parking is not None:
            parking.begin((cache.seen if cache is not None else version, snapshot.pod_signature))
        after: Cursor | None = None
        while True:
            page = pending_page(self.options.page_size, after, now=self.now, parking=parking)
            snapshot.load_workspaces(page.runs)
            for run in page.runs:
                self._schedule(run, snapshot)
            self.result.considered += page.skipped
            self.result.pending += page.skipped
            self.result.parked += page.skipped
            self._flush(snapshot)
            if page.seen < self.options.page_size:
                break
            after = page.last
        # a stale write loses (the Run changed meanwhile): the next pass retries
        run_status.write_many(self.pending_writes, run_status.STILL_PENDING)
        self.pending_writes = []
        self.result.seconds = time.perf_counter() - started
        metrics.PASS_SECONDS.observe(self.result.seconds)
        return self.result

    def _schedule(self, run: PendingRun, snapshot: Snapshot) -> None:
        self.result.considered += 1
        if run.cancel_requested:
            _cancel(run, self.now)
            self.result.cancelled += 1
            return
        started = time.perf_counter()
        decision = self.framework.schedule_one(run, snapshot)
        metrics.CYCLE_SECONDS.observe(time.perf_counter() - started)
        for (plugin, reason), count in decision.rejections.items():
            metrics.FILTER_REJECTIONS.labels(plugin, reason).inc(count)
        if decision.verdict is not None and decision.verdict.fatal:
            _fail(run, decision.verdict, self.now)
            self.result.failed += 1
            metrics.RESULTS.labels("failed").inc()
        elif decision.pod is None:
            status = (
                pending_status(run, decision.message, self.now)
                if self.options.write_pending_messages
                else None
            )
            if status is not None:
                self.pending_writes.append((run, status))
            if self.framework.parking is not None:
                self.framework.parking.park(run.pk, run.resource_version)
            self.result.pending += 1
            metrics.RESULTS.labels("unschedulable").inc()
        else:
            snapshot.assume(run, decision.pod)
            self.batch.append((run, decision.pod))
            if len(self.batch) >= self.options.bind_batch:
                self._flush(snapshot)

    def _flush(self, snapshot: Snapshot) -> None:
        if not self.batch:
            return
        outcome = binding.bind(self.batch, self.now, self.ledger)
        self.batch = []
        for run, _ in outcome.bound:
            snapshot.finish_binding(run)
        for run, pod, stage in outcome.conflicts:
            snapshot.forget(run, pod)  # released; the Run stays Pending for the next pass
            if stage == "pod":
                snapshot.exclude(pod)  # replaced or gone since the snapshot
            metrics.RESERVATION_CONFLICTS.labels(stage).inc()
        # after every release, so none is subtracted from it: what the database says
        resync = {pod.uid: pod for _, pod, stage in outcome.conflicts if stage == "capacity"}
        for uid, pod in resync.items():
            snapshot.set_used(pod, outcome.usage.get(uid, {}))
        if resync and self.framework.usage_cache is not None:
            # the cache counted less than the database: read it anew next pass
            self.framework.usage_cache.invalidate()
        self.result.conflicts += len(outcome.conflicts)
        self.result.bound += len(outcome.bound)
        self.result.bound_runs += [run.pk for run, _ in outcome.bound]
        run_events.bound(outcome.bound)
        metrics.RESULTS.labels("bound").inc(len(outcome.bound))
        for run, _ in outcome.bound:
            assert run.creation_timestamp is not None  # read from its row: never null
            metrics.QUEUE_WAIT_SECONDS.observe(
                max(0.0, (self.now - run.creation_timestamp).total_seconds())
            )


def run_pass(framework: Framework, now: datetime, options: PassOptions | None = None) -> PassResult:
    return Pass(framework, now, options or PassOptions()).run()
