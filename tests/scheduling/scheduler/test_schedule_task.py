"""The scheduling.schedule task: one cheap query when nothing is Pending, a pass otherwise."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import SchedulerLease
from scheduling.tasks import schedule
from tests.helpers.records import fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


def test_a_wake_up_with_nothing_pending_costs_one_query_and_no_lease():
    make_runtime()
    with CaptureQueriesContext(connection) as queries:
        assert schedule("run") == 0
    assert len(queries.captured_queries) == 1
    assert not SchedulerLease.objects.exists()


def test_a_wake_up_with_a_pending_run_binds_and_dispatches_it(monkeypatch):
    from scheduling import dispatch

    sent = []  # what would go to the pod's queue (kept off the shared test broker)
    monkeypatch.setattr(dispatch, "dispatch", lambda pks, now, app=None: sent.extend(pks))
    make_runtime()
    make_pod("bash-a")
    run = make_run("r1")
    assert schedule("run") == 1
    assert fresh(run).phase == "Scheduled" and sent == [run.pk]
