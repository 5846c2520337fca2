"""Change lists at scale: filters whose choices come from small tables, a count estimated by
PostgreSQL's planner above the exact-count limit, the index for newest-first order."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.resource_admin.scale import EstimatedCountPaginator, NamespaceFilter
from scheduling.admin.filters import RuntimeFilter
from scheduling.models import Run
from tests.helpers.records import make_run, make_runtime

pytestmark = pytest.mark.django_db


def _run_table_reads(queries) -> list[str]:
    table = Run._meta.db_table
    return [q["sql"] for q in queries if f'"{table}"' in q["sql"]]


def test_changelist_filters_do_not_read_the_run_table(admin_client):
    make_runtime()
    make_runtime("other")
    for i in range(3):
        make_run(f"r{i}")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get("/admin/scheduling/run/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "?namespace__exact=default" in body and "?runtime__exact=other" in body
    reads = _run_table_reads(queries.captured_queries)
    assert not [sql for sql in reads if "DISTINCT" in sql.upper()]
    # the page and its count; no second, unfiltered count
    assert len([sql for sql in reads if "COUNT(" in sql.upper()]) == 1
    filtered = admin_client.get("/admin/scheduling/run/?runtime__exact=other")
    assert filtered.status_code == 200 and "r0" not in filtered.content.decode()


def test_filter_choices_come_from_namespaces_and_runtimes():
    make_runtime()
    make_runtime("zeta")
    assert "default" in NamespaceFilter.choices_from(NamespaceFilter.__new__(NamespaceFilter))
    assert RuntimeFilter.choices_from(RuntimeFilter.__new__(RuntimeFilter)) == ["bash", "zeta"]


def test_below_the_limit_the_count_is_exact(settings):
    settings.KRUNTIMES_ADMIN_EXACT_COUNT_LIMIT = 10_000
    make_runtime()
    for i in range(3):
        make_run(f"r{i}")
    assert EstimatedCountPaginator(Run.objects.order_by("pk"), 100).count == 3


@pytest.mark.postgres
def test_above_the_limit_postgres_uses_the_planner_estimate(settings):
    settings.KRUNTIMES_ADMIN_EXACT_COUNT_LIMIT = 0
    make_runtime()
    for i in range(5):
        make_run(f"r{i}")
    paginator = EstimatedCountPaginator(Run.objects.order_by("pk"), 100)
    with CaptureQueriesContext(connection) as queries:
        count = paginator.count
    sqls = " ".join(q["sql"] for q in queries.captured_queries).upper()
    if connection.vendor == "postgresql":
        assert "COUNT(" not in sqls  # reltuples or EXPLAIN, never a count
        assert count >= 0
        filtered = EstimatedCountPaginator(Run.objects.filter(name="r1").order_by("pk"), 10)
        assert filtered.count >= 1  # the planner estimates at least one row
        nothing = EstimatedCountPaginator(Run.objects.filter(namespace__in=[]).order_by("pk"), 10)
        assert nothing.count == 0  # a filter no row passes has no SQL to explain
    else:
        assert count == 5  # SQLite has no estimate: exact


def test_the_newest_first_order_has_an_index():
    names = {index.name: index for index in Run._meta.indexes}
    assert names["run_newest_first"].fields == ["creation_timestamp", "id"]
