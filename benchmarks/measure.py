"""The timed parts of the scheduler bench.

- bulk: scheduling passes until nothing in the bench namespace is Pending (or a pass binds
  nothing); the time and the database queries of the passes only.
- probe: with the backlog bound (N active Runs), one new pending Run, one pass, repeated:
  p50/p99 of those pass durations.
- floor: the same binds as ONE raw bulk UPDATE, after resetting the Runs to Pending.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from portal.event_writer import writer
from scheduling.models import Run, RunPhase
from scheduling.scheduler import PassOptions, default_framework, run_pass

from . import workload as setup
from .workload import Log, Workload

HEARTBEAT_REFRESH_SECONDS = 5.0


class QueryCounter:
    """A ``connection.execute_wrapper`` that counts the statements sent."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


@dataclass
class BulkResult:
    bound: int = 0
    seconds: float = 0.0
    queries: int = 0
    passes: list[tuple[int, float, int]] = field(default_factory=list)  # bound, s, queries
    pending_left: int = 0


def _pending_in(namespace: str) -> int:
    return Run.objects.filter(namespace=namespace, phase=RunPhase.PENDING).count()


def bind_backlog(
    work: Workload, options: PassOptions, log: Log, max_passes: int = 1000
) -> BulkResult:
    framework = default_framework()
    result = BulkResult()
    for _ in range(max_passes):
        setup.refresh_heartbeats(work.namespace)  # untimed, as runtimed would
        counter = QueryCounter()
        with connection.execute_wrapper(counter):
            started = time.perf_counter()
            outcome = run_pass(framework, timezone.now(), options)
            # the pass's Events are written behind it: part of the work timed (and the
            # untimed steps between passes never run beside them)
            writer.flush()
            seconds = time.perf_counter() - started
        result.bound += outcome.bound
        result.seconds += seconds
        result.queries += counter.count
        result.passes.append((outcome.bound, seconds, counter.count))
        result.pending_left = _pending_in(work.namespace)
        log(
            f"pass {len(result.passes)}: bound {outcome.bound} in {seconds:.3f} s "
            f"({counter.count} queries, {outcome.pending} left pending, "
            f"{outcome.conflicts} conflicts); {result.pending_left} Pending in the namespace"
        )
        if outcome.bound == 0 or result.pending_left == 0:
            break
    return result


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (p99 of 200 samples is the 198th smallest)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def _delete_recorded(run: Run) -> None:
    """Delete a probe Run as the store would: with its DELETED watch event, which is how a
    scheduler's usage cache learns that it is gone (untimed)."""
    from django.db import transaction

    from portal.machinery import history
    from portal.machinery.registry import registry

    kind = registry.for_model(Run)
    with transaction.atomic():
        run.resource_version = history.allocate()
        if kind is not None:
            history.record(kind, run, history.DELETED)
        Run.objects.filter(pk=run.pk).delete()


def probe_passes(work: Workload, count: int, options: PassOptions, log: Log) -> list[float]:
    """Seconds of a pass that has exactly one new pending Run to place, ``count`` times.

    Each probe Run is deleted after its pass (untimed), so every pass sees the same cluster:
    the N bound Runs active in the snapshot. A first, untimed pass warms the scheduler.
    """
    framework = default_framework()
    # untimed: a scheduler's first pass fills its caches (the usage of every active Run),
    # once, when it starts; the probes time the passes of one that runs
    setup.refresh_heartbeats(work.namespace)
    started = time.perf_counter()
    run_pass(framework, timezone.now(), options)
    log(f"warm-up pass (fills the caches): {(time.perf_counter() - started) * 1000:.1f} ms")
    durations: list[float] = []
    refreshed = time.monotonic()
    missed = 0
    for index in range(count):
        if time.monotonic() - refreshed > HEARTBEAT_REFRESH_SECONDS:
            setup.refresh_heartbeats(work.namespace)
            refreshed = time.monotonic()
        run = work.probe_run(index)
        run.save(force_insert=True)
        started = time.perf_counter()
        outcome = run_pass(framework, timezone.now(), options)
        durations.append(time.perf_counter() - started)
        if run.pk not in outcome.bound_runs:
            missed += 1
        _delete_recorded(run)
    log(
        f"{count} probe passes: p50 {percentile(durations, 0.5) * 1000:.1f} ms, "
        f"p99 {percentile(durations, 0.99) * 1000:.1f} ms"
        + (f"; {missed} probe Run(s) NOT bound" if missed else "")
    )
    return durations


# --- the floor ----------------------------------------------------------------------------


def _columns() -> dict[str, str]:
    quote = connection.ops.quote_name
    names = (
        "id",
        "phase",
        "assigned_pod",
        "assigned_pod_uid",
        "attempt",
        "status",
        "resource_version",
        "dispatched_at",
        "deletion_timestamp",
    )
    return {name: quote(Run._meta.get_field(name).column) for name in names}


def _floor_sql() -> str:
    """One UPDATE binding every Run in a payload of (id, pod, pod uid, attempt, status)."""
    table = connection.ops.quote_name(Run._meta.db_table)
    c = _columns()
    assignments = (
        f"{c['phase']} = %s, {c['assigned_pod']} = v.pod, "
        f"{c['assigned_pod_uid']} = v.pod_uid, {c['attempt']} = v.attempt, "
        f"{c['status']} = v.status, "
        f"{c['resource_version']} = {table}.{c['resource_version']} + 1, "
        f"{c['dispatched_at']} = NULL"
    )
    where = (
        f"{table}.{c['id']} = v.id AND {table}.{c['phase']} = %s "
        f"AND {table}.{c['deletion_timestamp']} IS NULL"
    )
    if connection.vendor == "postgresql":
        source = (
            "unnest(%s::bigint[], %s::text[], %s::text[], %s::integer[], "
            "%s::text[]::jsonb[]) AS v(id, pod, pod_uid, attempt, status)"
        )
    elif connection.vendor == "sqlite":
        source = (
            "(SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS pod,"
            " json_extract(value, '$[2]') AS pod_uid, json_extract(value, '$[3]') AS attempt,"
            " json_extract(value, '$[4]') AS status FROM json_each(%s)) AS v"
        )
    else:
        raise NotImplementedError(f"no floor UPDATE for the {connection.vendor} backend")
    return f"UPDATE {table} SET {assignments} FROM {source} WHERE {where}"


def measure_floor(work: Workload, log: Log) -> float:
    """Reset the bench Runs to Pending (one UPDATE), then time the scheduler's binds done as
    ONE bulk UPDATE. Leaves the Runs bound exactly as the scheduler bound them."""
    rows = list(
        Run.objects.filter(namespace=work.namespace, phase=RunPhase.SCHEDULED)
        .exclude(name__startswith="probe-")
        .values_list("pk", "assigned_pod", "assigned_pod_uid", "attempt", "status")
    )
    Run.objects.filter(pk__in=[row[0] for row in rows]).update(
        phase=RunPhase.PENDING, assigned_pod="", assigned_pod_uid="", attempt=1, status={}
    )
    setup.vacuum(log)
    statuses = [json.dumps(status) for *_, status in rows]
    sql = _floor_sql()
    if connection.vendor == "postgresql":
        params = [
            RunPhase.SCHEDULED,
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            [r[3] for r in rows],
            statuses,
            RunPhase.PENDING,
        ]
    else:
        payload = json.dumps(
            [[r[0], r[1], r[2], r[3], s] for r, s in zip(rows, statuses, strict=True)]
        )
        params = [RunPhase.SCHEDULED, payload, RunPhase.PENDING]
    with connection.cursor() as cursor:
        started = time.perf_counter()
        cursor.execute(sql, params)
        seconds = time.perf_counter() - started
        updated = cursor.rowcount
    if updated != len(rows):
        raise RuntimeError(f"the floor UPDATE bound {updated} of {len(rows)} Runs")
    log(f"floor: {updated} binds in one UPDATE took {seconds:.4f} s")
    return seconds


# --- the whole bench --------------------------------------------------------------------


def run_scheduler_bench(
    work: Workload,
    *,
    probes: int = 200,
    keep: bool = False,
    options: PassOptions | None = None,
    log: Log = lambda _: None,
) -> dict:
    """Set up, time, clean up; the result is the JSON line's fields (plus ``bound``)."""
    options = options or PassOptions()
    started = time.perf_counter()
    setup.create(work, log)
    log(f"setup took {time.perf_counter() - started:.1f} s")
    try:
        bulk = bind_backlog(work, options, log)
        setup.vacuum(log)
        durations = probe_passes(work, probes, options, log) if probes else []
        floor = measure_floor(work, log) if bulk.bound else 0.0
    finally:
        if not keep:
            setup.delete_namespace(work.namespace)
            log(f"deleted namespace {work.namespace}")
    ms = [seconds * 1000 for seconds in durations]
    result = {
        "runs": work.runs,
        "pods": work.pods,
        "affinity": work.affinity,
        "workspaces": work.workspaces,
        "bound_per_s": round(bulk.bound / bulk.seconds, 1) if bulk.seconds else 0.0,
        "total_s": round(bulk.seconds, 4),
        "pass_p50_ms": round(percentile(ms, 0.5), 2),
        "pass_p99_ms": round(percentile(ms, 0.99), 2),
        "queries_per_bind": round(bulk.queries / bulk.bound, 3) if bulk.bound else None,
        "floor_s": round(floor, 4),
    }
    if floor:
        log(f"total_s / floor_s = {bulk.seconds / floor:.1f}")
    return {**result, "bound": bulk.bound, "pending_left": bulk.pending_left}
