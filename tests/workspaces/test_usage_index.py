"""The workspace pass reads only Runs that use a workspace: ``workspace > ''`` (a range the
index answers on PostgreSQL) selects exactly the Runs with a non-empty workspace."""

from __future__ import annotations

import pytest
from django.db import connection

from scheduling.models import Run
from tests.helpers.records import make_run, make_runtime

pytestmark = pytest.mark.django_db


def test_the_range_selects_exactly_the_runs_with_a_workspace():
    make_runtime()
    make_run("plain")
    Run.objects.filter(name="plain").update(workspace="")
    make_run("uses")
    Run.objects.filter(name="uses").update(workspace="ws-a")
    found = set(Run.objects.filter(workspace__gt="").values_list("name", flat=True))
    assert found == set(Run.objects.exclude(workspace="").values_list("name", flat=True))
    assert found == {"uses"}


@pytest.mark.postgres
def test_on_postgres_the_usage_query_searches_the_workspace_index():
    query = Run.objects.filter(workspace__gt="").values_list("namespace", "workspace")
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            return  # SQLite plans without statistics; the semantics are tested above
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "workspace" in plan and "Seq Scan" not in plan
