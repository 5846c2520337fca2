"""Bulk rows for the idle and api benches: Runs cloned from one validated template and
written in large batches of one statement each (``portal.machinery.bulk_insert``) (setup, untimed), so a million take minutes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from django.db import connection, transaction

from portal.machinery import bulk_insert
from scheduling.models import Run

from .workload import Log

BATCH = 5000


def _chunks(total: int, size: int) -> Iterator[range]:
    for start in range(0, total, size):
        yield range(start, min(total, start + size))


def create_runs(
    template: Run,
    total: int,
    make: Callable[[Run, int], None],
    log: Log,
    *,
    created: datetime,
    what: str = "Runs",
) -> None:
    """``total`` Runs like ``template``; ``make(run, i)`` sets each one's name, labels, status."""
    started = time.perf_counter()
    for chunk in _chunks(total, BATCH):
        runs = []
        for i in chunk:
            run = Run(
                namespace=template.namespace,
                uid=uuid.uuid4(),
                labels=dict(template.labels),
                annotations=dict(template.annotations),
                finalizers=list(template.finalizers),
                spec=template.spec,
                status={},
                creation_timestamp=created + timedelta(microseconds=i),
            )
            make(run, i)
            run.sync_columns()
            runs.append(run)
        with transaction.atomic():
            bulk_insert.insert(Run, runs)
        if chunk.stop % 100_000 == 0 or chunk.stop == total:
            rate = chunk.stop / (time.perf_counter() - started)
            log(f"{what}: {chunk.stop}/{total} ({rate:.0f}/s)")


def analyze(log: Log) -> None:
    if connection.vendor != "postgresql":
        return
    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {table}")
    log("vacuum analyze done")
