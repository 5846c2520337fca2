"""The TTL pass reads only due Runs: ``expires_at`` is stored (finished_at + TTL), kept in step
with both, and found through the ``run_ttl_due`` partial index."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.machinery import store
from scheduling import cleanup, run_status
from scheduling.models import Run, RunPhase
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNS, fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()
    make_pod("bash-a", runs=100)


def finish(run: Run, when) -> Run:
    run = fresh(run)
    status = run_status.finished(run.status, RunPhase.SUCCEEDED, "", "", when, run.generation)
    assert run_status.write(run, status)
    return fresh(run)


def test_expires_at_is_finish_plus_ttl_and_follows_a_ttl_change():
    now = timezone.now().replace(microsecond=0)
    run = finish(make_run("r1", ttlSecondsAfterFinished=60), now)
    assert run.finished_at is not None
    assert run.expires_at == run.finished_at + timedelta(seconds=60)
    store.patch(
        RUNS,
        "default",
        "r1",
        {"spec": {"ttlSecondsAfterFinished": 5}},
        patch_type="application/merge-patch+json",
        context=OPERATOR,
    )
    assert fresh(run).expires_at == run.finished_at + timedelta(seconds=5)


def test_no_ttl_no_expiry_and_an_unfinished_run_never_expires():
    assert finish(make_run("r1"), timezone.now()).expires_at is None
    assert make_run("r2", ttlSecondsAfterFinished=1).expires_at is None


def test_a_pass_over_many_not_due_runs_deletes_none_in_one_query():
    now = timezone.now()
    runs = [make_run(f"r{i}", ttlSecondsAfterFinished=3600) for i in range(30)]
    for run in runs:
        finish(run, now)
    with CaptureQueriesContext(connection) as queries:
        progress = cleanup.expire_finished(now + timedelta(seconds=60), batch=100)
    assert progress.expired == 0
    assert len(queries.captured_queries) == 1
    due = finish(make_run("due", ttlSecondsAfterFinished=1), now - timedelta(seconds=10))
    progress = cleanup.expire_finished(now + timedelta(seconds=60), batch=100)
    assert progress.expired == 1
    assert fresh(due).deletion_timestamp is not None or not Run.objects.filter(pk=due.pk).exists()
    assert Run.objects.filter(name__startswith="r").count() == 30


@pytest.mark.postgres
def test_the_due_query_uses_the_partial_index():
    """On PostgreSQL the partial index; SQLite's planner (no statistics) picks an index too,
    never a scan of the table."""
    now = timezone.now()
    query = Run.objects.filter(
        expires_at__isnull=False, expires_at__lte=now, deletion_timestamp__isnull=True
    ).values_list("pk")
    with connection.cursor() as cursor:
        sql, params = query.query.sql_with_params()
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        else:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}", params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    if connection.vendor == "postgresql":
        assert "run_ttl_due" in plan
    else:
        assert "SCAN scheduling_run" not in plan
