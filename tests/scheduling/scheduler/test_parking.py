"""Parking: a Run no pod could take is skipped while nothing it could wait for has changed
(the cluster's resourceVersion and what the pods offer), and looked at again on any change
or after the flush interval."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.machinery import store
from scheduling import pod_writer
from scheduling.models import Run, RunPhase, RuntimePod
from scheduling.scheduler import PassOptions, default_framework, run_pass
from scheduling.scheduler.parking import Parking
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNS, fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def framework():
    make_runtime()
    return default_framework()


def schedule(framework):
    return run_pass(framework, timezone.now(), PassOptions())


def settle(framework) -> None:
    """Passes until one writes nothing (the first writes the Pending messages)."""
    schedule(framework)
    schedule(framework)


def _run_rows_read(queries) -> int:
    return sum(1 for q in queries if '"scheduling_run"."status"' in q["sql"])


def test_unplaceable_runs_are_skipped_while_nothing_changes(framework):
    make_pod("bash-a", runs=0)
    runs = [make_run(f"r{i}") for i in range(20)]
    settle(framework)
    messages = [fresh(r).status.get("message") for r in runs]
    with CaptureQueriesContext(connection) as queries:
        result = schedule(framework)
    assert (result.considered, result.pending, result.parked) == (20, 20, 20)
    assert _run_rows_read(queries.captured_queries) == 0  # only the queue's keys
    assert [fresh(r).status.get("message") for r in runs] == messages


def test_a_new_pod_looks_at_every_parked_run_again(framework):
    make_pod("bash-a", runs=0)
    make_run("r0")
    settle(framework)
    assert schedule(framework).parked == 1
    make_pod("bash-b", runs=1)  # pods are not versioned: their signature says it
    result = schedule(framework)
    assert (result.parked, result.bound) == (0, 1)


def test_more_capacity_on_a_pod_looks_again(framework):
    pod = make_pod("bash-a", runs=0)
    make_run("r0")
    settle(framework)
    pod_writer.update_where(RuntimePod.objects.filter(pk=pod.pk), capacity={"runs": 1})
    assert schedule(framework).bound == 1


def test_a_heartbeat_that_is_fresh_again_looks_again(framework):
    pod = make_pod("bash-a", runs=1, heartbeat_age=600)
    make_run("r0")
    settle(framework)
    assert schedule(framework).parked == 1
    RuntimePod.objects.filter(pk=pod.pk).update(last_heartbeat=timezone.now())
    assert schedule(framework).bound == 1


def test_a_heartbeat_time_alone_does_not(framework):
    pod = make_pod("bash-a", runs=0)
    make_run("r0")
    settle(framework)
    RuntimePod.objects.filter(pk=pod.pk).update(last_heartbeat=timezone.now())
    assert schedule(framework).parked == 1


def test_any_write_in_the_cluster_looks_again(framework):
    make_pod("bash-a", runs=1)
    first = make_run("r0")
    make_run("r1")
    settle(framework)  # r0 bound, r1 waits for its slot
    assert schedule(framework).parked == 1
    # r0 finishes: a Run write (the cluster's version moves), its slot is free again
    done = fresh(first)
    from scheduling import run_status

    assert run_status.write(
        done, run_status.finished(done.status, RunPhase.SUCCEEDED, "", "", timezone.now(), 1)
    )
    result = schedule(framework)
    assert (result.parked, result.bound) == (0, 1)


def test_a_runtime_created_later_looks_again(framework):
    make_run("r0", runtime="later")
    settle(framework)
    assert "not found" in Run.objects.get(name="r0").status["message"]
    assert schedule(framework).parked == 1
    make_runtime("later")
    result = schedule(framework)
    assert result.parked == 0
    assert Run.objects.get(name="r0").status["message"].startswith("0/0 pods")


def test_a_cancelled_parked_run_ends_at_once(framework):
    make_pod("bash-a", runs=0)
    make_run("r0")
    settle(framework)
    store.patch(RUNS, "default", "r0", {"spec": {"cancelRequested": True}}, context=OPERATOR)
    result = schedule(framework)
    assert result.parked == 0
    assert Run.objects.get(name="r0").phase == RunPhase.CANCELLED


def test_the_flush_interval_looks_at_parked_runs_again(framework):
    framework.parking = Parking(flush_seconds=0)
    make_pod("bash-a", runs=0)
    make_run("r0")
    settle(framework)
    assert schedule(framework).parked == 0


def test_parking_is_per_version_of_the_run():
    parking = Parking()
    assert parking.begin(("v1", ())) is False
    parking.park(7, 3)
    assert parking.begin(("v1", ())) is True
    assert parking.parked(7, 3) and not parking.parked(7, 4) and not parking.parked(8, 3)
    assert parking.begin(("v2", ())) is False  # another token: nothing parked
    assert not parking.parked(7, 3)


def test_a_run_waiting_out_its_backoff_is_not_read_until_it_is_due(framework):
    make_pod("bash-a", runs=1)
    run = make_run("r0")
    Run.objects.filter(pk=run.pk).update(not_before=timezone.now() + timedelta(hours=1))
    settle(framework)
    assert schedule(framework).considered == 0
