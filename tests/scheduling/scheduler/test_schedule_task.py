"""The scheduler on its work queue (queue ``scheduler``, one key): one cheap query when nothing
is Pending, a pass and its dispatch otherwise, wake-ups merged into one key, a pass again when
a retry's backoff ends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.machinery import workqueue
from portal.models import WorkItem
from scheduling import triggers
from scheduling.models import Run
from scheduling.tasks import schedule_pending
from tests.helpers.records import fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """What would go to the pods' queues (kept off the shared test broker)."""
    from scheduling import dispatch

    pks: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch", lambda runs, now, app=None: pks.extend(runs))
    return pks


def test_a_wake_up_with_nothing_pending_costs_one_query():
    make_runtime()
    with CaptureQueriesContext(connection) as queries:
        assert schedule_pending() is None
    assert len(queries.captured_queries) == 1


def test_a_wake_up_with_a_pending_run_binds_and_dispatches_it(sent):
    make_runtime()
    make_pod("bash-a")
    run = make_run("r1")
    assert schedule_pending() is None
    assert fresh(run).phase == "Scheduled" and sent == [run.pk]


def test_wake_ups_merge_into_one_key_of_the_scheduler_queue(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        for source in ("run", "pod", "runtime", "workspace"):
            triggers.request_scheduling(source)
    rows = list(WorkItem.objects.filter(queue=triggers.QUEUE).values_list("key", flat=True))
    assert rows == [triggers.KEY]


def test_an_unknown_wake_up_source_is_refused():
    with pytest.raises(ValueError, match="unknown wake-up source"):
        triggers.request_scheduling("whim")


def test_a_retry_waiting_out_its_backoff_has_the_pass_requeued_when_it_ends(sent):
    make_runtime()
    make_pod("bash-a")
    run = make_run("r1")
    Run.objects.filter(pk=run.pk).update(not_before=timezone.now() + timedelta(seconds=30))
    requeue = schedule_pending()
    assert isinstance(requeue, workqueue.Requeue)
    assert 28 < requeue.after <= 30
    assert fresh(run).phase == "Pending" and sent == []


def test_a_worker_killed_mid_pass_holds_scheduling_back_a_minute_at_most():
    # as the scheduler's lease did: its claim on the one key expires after PASS_LEASE, not
    # after the work queue's default five minutes
    now = timezone.now()
    WorkItem.objects.create(queue=triggers.QUEUE, key=triggers.KEY, due_at=now)
    assert workqueue.claim(triggers.QUEUE, now) is not None
    claimed = WorkItem.objects.get(queue=triggers.QUEUE)
    assert claimed.claimed_until == now + triggers.PASS_LEASE < now + workqueue.LEASE
    assert workqueue.claim(triggers.QUEUE, now + triggers.PASS_LEASE) is None
    later = now + triggers.PASS_LEASE + timedelta(seconds=1)
    assert workqueue.claim(triggers.QUEUE, later) is not None  # another worker takes it
