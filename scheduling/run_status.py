"""The one status writer of the Run kind: each transition's new status, and the
compare-and-set that writes it.

Transitions are pure functions (``pending``, ``scheduled``, ``running``, ``retrying``,
``finished``) returning the new status with its conditions kept (Scheduled, Running, Ready in
function mode, Completed; lastTransitionTime moves only when a condition's status flips:
``set_condition``). ``write`` is the compare-and-set every controller uses (lifecycle, the
scheduler's pass, bind); ``write_many`` is the same write for a batch, one SQL statement
generated from the same ``Guard`` and columns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

from django.db import connection, transaction

from portal.machinery import history
from portal.machinery.conditions import format_time, with_conditions
from runtimed.protocol import FUNCTION_REGISTERED, status_message
from scheduling.models import Run, RunPhase

MESSAGE_LIMIT = 4096
ASSIGNED = "Assigned"  # the Scheduled condition's reason once the Run is bound


def _with(status: dict, now: datetime, generation: int, **conditions) -> dict:
    bounded = {
        ctype: (cstatus, reason, status_message(message, MESSAGE_LIMIT))
        for ctype, (cstatus, reason, message) in conditions.items()
    }
    return with_conditions(status, now, generation, bounded)


def pending(status: dict, message: str, now: datetime, generation: int) -> dict:
    new = _with(status, now, generation, Scheduled=("False", "Unschedulable", message))
    new.update(phase=RunPhase.PENDING, message=status_message(message, MESSAGE_LIMIT))
    new.setdefault("attempt", 1)
    return new


def scheduled(status: dict, pod_name: str, pod_uid: str, now: datetime, generation: int) -> dict:
    new = _with(
        status, now, generation, Scheduled=("True", ASSIGNED, f"assigned to Runtime Pod {pod_name}")
    )
    new.update(phase=RunPhase.SCHEDULED, assignedPod=pod_name, assignedPodUID=pod_uid, message="")
    new.setdefault("attempt", 1)
    return new


def running(status: dict, start: str | None, now: datetime, generation: int) -> dict:
    new = _with(status, now, generation, Running=("True", "Running", "the step is running"))
    new.update(phase=RunPhase.RUNNING, startTime=start or format_time(now))
    return new


def ready(
    status: dict,
    start: str | None,
    now: datetime,
    generation: int,
    endpoint: dict | None,
    message: str,
) -> dict:
    """A function Run serves: Ready (active, never terminal), its endpoint published."""
    new = _with(
        status,
        now,
        generation,
        Running=("True", "Running", "the function is registered"),
        Ready=("True", FUNCTION_REGISTERED, message),
    )
    new.update(phase=RunPhase.READY, startTime=status.get("startTime") or start or format_time(now))
    new.pop("endpoint", None)
    if endpoint is not None:
        new["endpoint"] = endpoint
    return new


def _not_ready(status: dict, conditions: dict, reason: str, message: str) -> None:
    """A function Run that served stops being Ready (its endpoint answers 503/409 now)."""
    if any(c.get("type") == "Ready" for c in status.get("conditions") or []):
        conditions["Ready"] = ("False", reason, message)


def _ran(status: dict | None) -> bool:
    # it ran if it was Running, or if the report says when it started (reports may overtake)
    status = status or {}
    return bool(status.get("startTime")) or status.get("phase") in (
        RunPhase.RUNNING,
        RunPhase.READY,
    )


def retrying(
    status: dict, reason: str, message: str, now: datetime, generation: int, *, delay_seconds: float
) -> dict:
    """The failed attempt is over and the next one waits out its backoff, Pending again."""
    attempt = int((status or {}).get("attempt") or 1)
    summary = (
        f"attempt {attempt} failed ({reason}: {message})"
        if message
        else f"attempt {attempt} failed ({reason})"
    )
    waiting = f"{summary}; attempt {attempt + 1} starts after a {delay_seconds:g}s backoff"
    conditions = {"Scheduled": ("False", "BackOff", waiting)}
    if _ran(status):
        conditions["Running"] = ("False", reason, message)
    _not_ready(status, conditions, reason, message)
    new = _with(status, now, generation, **conditions)
    for key in ("assignedPod", "assignedPodUID", "exitCode", "completionTime", "reason"):
        new.pop(key, None)
    new.update(
        phase=RunPhase.PENDING, attempt=attempt + 1, message=status_message(waiting, MESSAGE_LIMIT)
    )
    return new


def finished(
    status: dict,
    phase: str,
    reason: str,
    message: str,
    now: datetime,
    generation: int,
    *,
    exit_code: int | None = None,
    completion: str | None = None,
    outputs: dict | None = None,
    artifact_refs: list | None = None,
) -> dict:
    """A terminal phase: Succeeded, Failed, Timeout or Cancelled."""
    ok = phase == RunPhase.SUCCEEDED
    reason = reason or ("Succeeded" if ok else phase)
    conditions = {"Completed": ("True", reason, message)}
    if _ran(status):
        conditions["Running"] = ("False", reason, message)
    _not_ready(status, conditions, reason, message)
    new = _with(status, now, generation, **conditions)
    new.pop("endpoint", None)  # a finished Run is invoked nowhere
    new.update(
        phase=phase,
        reason=reason,
        message=status_message(message, MESSAGE_LIMIT),
        completionTime=completion or format_time(now),
    )
    if exit_code is not None:
        new["exitCode"] = exit_code
    if outputs:
        new["outputs"] = dict(outputs)
    if artifact_refs:
        new["artifactRefs"] = list(artifact_refs)
    return new


# ------------------------------------------------------------------------------ writing


class Versioned(Protocol):
    """A Run as a writer holds it: a Run row or the scheduler's PendingRun."""

    pk: int
    resource_version: int
    status: dict


@dataclass(frozen=True)
class Guard:
    """What must still hold for a write to land, besides the resourceVersion it read."""

    phase: str | None = None  # the row is still in this phase
    live: bool = False  # the row is not being deleted
    resets: tuple[str, ...] = ()  # columns set to NULL with the write


ANY = Guard()
STILL_PENDING = Guard(phase=RunPhase.PENDING)
# Bind: only a Pending Run nobody is deleting; a fresh attempt has not been dispatched yet.
BIND = Guard(phase=RunPhase.PENDING, live=True, resets=("dispatched_at",))


def write(run: Versioned, status: dict, guard: Guard = ANY, **columns: Any) -> bool:
    """Compare-and-set ``status`` (with the columns it determines, and ``columns``) on the Run
    at the resourceVersion ``run`` was read at; False when someone wrote first. ``run`` is
    updated in step when the write lands."""
    values = {**Run.status_columns(status), **dict.fromkeys(guard.resets), **columns}
    values["expires_at"] = Run.expiry(values["finished_at"])
    guards: dict[str, Any] = {}
    if guard.phase is not None:
        guards["phase"] = guard.phase
    if guard.live:
        guards["deletion_timestamp__isnull"] = True
    before = (run.status or {}).get("phase") or RunPhase.PENDING
    if isinstance(run, Run):
        if not history.compare_and_set(run, {"status": status, **values}, **guards):
            return False
    else:  # the scheduler's PendingRun: the row is written, then recorded as it now is
        with transaction.atomic():
            version = history.allocate()
            query = Run.objects.filter(pk=run.pk, resource_version=run.resource_version, **guards)
            if not query.update(status=status, resource_version=version, **values):
                transaction.set_rollback(True)
                return False
            written = list(Run.objects.filter(pk=run.pk))
            for row in written:
                row._phase_read = before  # what the watchers compare against
            history.record_many(_run_kind(), written)
        run.status, run.resource_version = status, version
        for column, value in values.items():
            if hasattr(run, column):
                setattr(run, column, value)
    return True


def write_many(writes: Iterable[tuple[Versioned, dict]], guard: Guard) -> set[int]:
    """``write`` for a batch in one UPDATE (PostgreSQL, SQLite); the pks whose write landed.
    The objects are left as they were read, except on the one-UPDATE-per-Run fallback (the
    batch callers drop them either way)."""
    writes = list(writes)
    if not writes:
        return set()
    vendor = connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        return {run.pk for run, status in writes if write(run, status, guard)}
    with transaction.atomic():
        return _write_batch(vendor, writes, guard)


def _write_batch(vendor: str, writes: list[tuple[Versioned, dict]], guard: Guard) -> set[int]:
    last = history.allocate(len(writes))  # one new resourceVersion each, in order
    rows = json.dumps(
        [
            {
                "id": run.pk,
                "resource_version": run.resource_version,
                "new_version": last - len(writes) + 1 + index,
                **Run.status_columns(status),
                "status": status,
            }
            for index, (run, status) in enumerate(writes)
        ]
    )
    params = [rows] + ([guard.phase] if guard.phase is not None else [])
    recorded = _recorded_statement(vendor, guard)
    with connection.cursor() as cursor:
        if recorded is not None:  # the watch events are written by the same statement
            cursor.execute(recorded, params)
            return {pk for (pk,) in cursor.fetchall()}
        cursor.execute(_statement(vendor, guard), params)
        won = {pk for (pk,) in cursor.fetchall()}
        if won:
            history.record_many(_run_kind(), Run.objects.filter(pk__in=won))
        return won


def _run_kind():
    from portal.machinery.registry import registry

    return registry.for_model(Run)


def _written() -> tuple[str, ...]:
    """The fields a status write sets: the status and the columns it determines."""
    return (*Run.status_columns({}), "status")


@lru_cache(maxsize=8)
def _recorded_statement(vendor: str, guard: Guard) -> str | None:
    """PostgreSQL: the batch UPDATE, and the INSERT of each written Run's watch event from the
    rows it returns, in one statement (no read back, no manifest built in Python); None
    where the events are recorded from Python."""
    if vendor != "postgresql":
        return None
    record = history.record_sql(_run_kind(), "won", history.MODIFIED)
    if record is None:
        return None
    table = connection.ops.quote_name(Run._meta.db_table)
    pk = connection.ops.quote_name(Run._meta.pk.column)
    update = _statement(vendor, guard, returning=f"{table}.*")
    return f"WITH won AS ({update}), recorded AS ({record}) SELECT won.{pk} FROM won"


@lru_cache(maxsize=8)
def _statement(vendor: str, guard: Guard, returning: str = "") -> str:
    """The batch compare-and-set UPDATE over a JSON array of rows (one parameter, cheap to
    send); every value is a parameter."""
    names = (
        "id",
        "resource_version",
        *_written(),
        *guard.resets,
        "phase",
        "deletion_timestamp",
        "expires_at",
        "ttl_after_finished",
    )
    fields = {name: Run._meta.get_field(name) for name in names}
    fields["new_version"] = fields["resource_version"]
    table = connection.ops.quote_name(Run._meta.db_table)
    column = {name: connection.ops.quote_name(field.column) for name, field in fields.items()}
    row = ("id", "resource_version", "new_version", *_written())
    if vendor == "postgresql":
        types = ", ".join(f"{name} {fields[name].db_type(connection)}" for name in row)
        source = f"jsonb_to_recordset(%s::jsonb) AS v({types})"
    else:  # sqlite
        picks = ", ".join(f"json_extract(value, '$.{name}') AS {name}" for name in row)
        source = f"(SELECT {picks} FROM json_each(%s)) AS v"
    sets = [
        *(f"{column[name]} = v.{name}" for name in _written()),
        f"{column['resource_version']} = v.new_version",
        *(f"{column[name]} = NULL" for name in guard.resets),
        # the TTL's due time, from the finish time written and the row's own TTL
        f"{column['expires_at']} = "
        + connection.ops.combine_duration_expression(
            "+", [f"v.{column['finished_at']}", f"{table}.{column['ttl_after_finished']}"]
        ),
    ]
    tests = [("id", "= v.id"), ("resource_version", "= v.resource_version")]
    if guard.phase is not None:
        tests.append(("phase", "= %s"))
    if guard.live:
        tests.append(("deletion_timestamp", "IS NULL"))
    where = " AND ".join(f"{table}.{column[name]} {test}" for name, test in tests)
    return (
        f"UPDATE {table} SET {', '.join(sets)} FROM {source} WHERE {where} "
        f"RETURNING {returning or table + '.' + column['id']}"
    )
