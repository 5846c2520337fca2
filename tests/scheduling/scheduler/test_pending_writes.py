"""Pending messages: one batched write per pass, and none when the reasons did not change."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.scheduler import PassOptions, default_framework, run_pass
from scheduling.scheduler.cycle import reason_set
from tests.helpers.records import fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


def schedule():
    return run_pass(default_framework(), timezone.now(), PassOptions())


def _writes(queries) -> int:
    """UPDATEs, and the batch UPDATE that records its watch events too (PostgreSQL: WITH)."""
    return sum(1 for q in queries if q["sql"].lstrip().upper().startswith(("UPDATE", "WITH")))


def test_a_pass_over_many_unplaceable_runs_writes_their_messages_in_one_statement():
    make_runtime()
    make_pod("bash-a", runs=0)
    runs = [make_run(f"r{i}") for i in range(30)]
    with CaptureQueriesContext(connection) as first:
        schedule()
    assert [fresh(r).status.get("message") for r in runs] == [
        "0/1 pods: 1 has less capacity than the Run requests"
    ] * 30
    # the counter, the batch UPDATE: one each, however many Runs
    assert _writes(first.captured_queries) == 2
    assert len(first.captured_queries) < 15
    with CaptureQueriesContext(connection) as second:
        schedule()
    assert _writes(second.captured_queries) == 0


def test_a_count_change_is_not_rewritten_but_a_new_reason_is():
    make_runtime()
    make_pod("bash-a", runs=0)
    run = make_run("r1")
    schedule()
    version = fresh(run).resource_version
    make_pod("bash-b", runs=0)  # 0/2 pods: 2 have less capacity: the same reason
    schedule()
    assert fresh(run).resource_version == version
    assert fresh(run).status["message"] == "0/1 pods: 1 has less capacity than the Run requests"
    make_pod("bash-c", ready=False)  # a new reason
    schedule()
    assert fresh(run).status["message"] == (
        "0/3 pods: 2 have less capacity than the Run requests, 1 is not ready"
    )


def test_reason_set_drops_counts_only():
    assert reason_set("0/3 pods: 2 at capacity, 1 is not ready") == {
        "AtCapacity",
        "NotReady",
    }
    assert reason_set("0/1 pods: 1 is not ready") == reason_set("0/4 pods: 4 are not ready")
    assert reason_set("0/5 pods: 5 at capacity") == reason_set("0/2 pods: 2 at capacity")
    assert reason_set('Runtime "x" not found') == {'Runtime "x" not found'}
