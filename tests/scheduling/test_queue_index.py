"""The scheduler's queue page is a walk of the ``run_pending_queue`` index: it holds only
Runs that wait (Pending, not being deleted) in queue order, so a page needs no sort of every
Pending Run, and a bound Run leaves it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from scheduling.models import Run
from scheduling.scheduler.loading import _queue
from tests.helpers.records import make_run, make_runtime

pytestmark = pytest.mark.django_db


def _plan(query) -> str:
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        else:
            # any plan that can do without a scan and a sort, whatever the statistics say:
            # there is one only if an index gives the page's predicate and order
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cursor.execute(f"SET LOCAL {setting} = off")
            cursor.execute(f"EXPLAIN {sql}", params)
        return " ".join(str(row) for row in cursor.fetchall())


@pytest.mark.postgres
def test_a_queue_page_walks_the_pending_index_in_order():
    """On PostgreSQL the partial index in the page's order (no Sort node); SQLite's planner
    (no statistics) picks an index too, never a scan of the table."""
    make_runtime()
    for index in range(5):
        make_run(f"r{index}")
    plans = [_plan(_queue(None, timezone.now())[:100])]
    # and the keys-only page a parked queue reads, after a cursor
    first = _queue(None, timezone.now()).first()
    assert first is not None
    after = (first.priority, first.creation_timestamp, first.pk)
    keys = _queue(after, timezone.now()).values_list("pk", "resource_version")[:100]
    plans.append(_plan(keys))
    for plan in plans:
        if connection.vendor == "postgresql":
            assert "run_pending_queue" in plan
            assert "Sort" not in plan
        else:
            assert "SCAN scheduling_run" not in plan


def test_the_index_holds_only_what_waits():
    index = next(i for i in Run._meta.indexes if i.name == "run_pending_queue")
    assert index.fields == ["-priority", "creation_timestamp", "id"]
    assert dict(index.condition.children) == {
        "phase": "Pending",
        "deletion_timestamp__isnull": True,
    }
