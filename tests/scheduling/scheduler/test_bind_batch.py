"""The batch bind on the configured database (run the suite on SQLite and on PostgreSQL):
one compare-and-set UPDATE per batch, whose unreturned Runs are "run" conflicts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling import run_status
from scheduling.models import Run
from scheduling.scheduler import bind as binding
from scheduling.scheduler.loading import pending_runs, take_snapshot
from tests.helpers.records import fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch():
    """Five pending Runs and the pod the snapshot offers, as the cycle would hand them over."""
    make_runtime()
    make_pod("bash-a", runs=10)
    runs = {run.name: run for run in (make_run(f"r{i}") for i in range(1, 6))}
    now = timezone.now()
    pod = take_snapshot(now).pods_by_key["default", "bash-a"]
    return runs, [(run, pod) for run in pending_runs(100)], now


def conflicts(result) -> dict[str, str]:
    return {run.name: stage for run, _, stage in result.conflicts}


def test_stale_changed_and_deleted_runs_are_run_conflicts(batch):
    runs, assignments, now = batch
    Run.objects.filter(pk=runs["r2"].pk).update(resource_version=99)  # written meanwhile
    Run.objects.filter(pk=runs["r3"].pk).update(phase="Cancelled")  # no longer Pending
    Run.objects.filter(pk=runs["r4"].pk).update(deletion_timestamp=now)
    result = binding.bind(assignments, now)
    assert sorted(run.name for run, _ in result.bound) == ["r1", "r5"]
    assert conflicts(result) == {"r2": "run", "r3": "run", "r4": "run"}
    pod = assignments[0][1]
    assert result.usage == {pod.uid: {"runs": 2}}
    for name in ("r1", "r5"):
        bound = fresh(runs[name])
        assert (bound.phase, bound.assigned_pod, bound.assigned_pod_uid, bound.attempt) == (
            "Scheduled",
            "bash-a",
            pod.uid,
            1,
        )
        assert bound.resource_version > runs[name].resource_version
        assert bound.dispatched_at is None
        assert bound.status["assignedPodUID"] == pod.uid and bound.status["phase"] == "Scheduled"
        scheduled = next(c for c in bound.status["conditions"] if c["type"] == "Scheduled")
        assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
            "True",
            "Assigned",
            "assigned to Runtime Pod bash-a",
        )
    assert fresh(runs["r2"]).resource_version == 99 and fresh(runs["r2"]).phase == "Pending"
    assert fresh(runs["r3"]).phase == "Cancelled"
    assert fresh(runs["r4"]).phase == "Pending"


def test_the_update_itself_compares_and_sets(batch, monkeypatch):
    """A Run changed after the pre-read is still not bound, and its request is given back."""
    runs, assignments, now = batch
    monkeypatch.setattr(
        binding,
        "_still_pending",
        lambda by_pod: {run.pk for runs in by_pod.values() for run in runs},
    )
    Run.objects.filter(pk=runs["r2"].pk).update(resource_version=99)
    Run.objects.filter(pk=runs["r3"].pk).update(phase="Running")
    Run.objects.filter(pk=runs["r4"].pk).update(deletion_timestamp=now)
    result = binding.bind(assignments, now)
    assert sorted(run.name for run, _ in result.bound) == ["r1", "r5"]
    assert conflicts(result) == {"r2": "run", "r3": "run", "r4": "run"}
    assert result.usage == {assignments[0][1].uid: {"runs": 2}}  # only what was bound


def test_a_lost_run_does_not_take_capacity_from_the_next(batch):
    runs, assignments, now = batch
    make_pod("bash-b", runs=1)
    small = take_snapshot(now).pods_by_key["default", "bash-b"]
    first, second = (run for run, _ in assignments[:2])
    Run.objects.filter(pk=first.pk).update(resource_version=99)
    result = binding.bind([(first, small), (second, small)], now)
    assert conflicts(result) == {first.name: "run"}
    assert [run.name for run, _ in result.bound] == [second.name]


def _pending_reads(queries) -> list[str]:
    """The bind's read of which Runs are still Pending."""
    return [
        q["sql"]
        for q in queries
        if q["sql"].startswith('SELECT "scheduling_run"."id" AS "pk", "scheduling_run"."resource')
    ]


def test_a_run_alone_on_its_pod_is_left_to_the_update(batch):
    """Only Runs sharing a pod with others of the batch are read before the bind: a lost race
    of a Run alone on its pod takes capacity from no one, and the UPDATE finds it out."""
    runs, assignments, now = batch
    make_pod("bash-b", runs=1)
    other = take_snapshot(now).pods_by_key["default", "bash-b"]
    shared, (lost, _), (last, _) = assignments[:2], assignments[2], assignments[3]
    Run.objects.filter(pk=lost.pk).update(resource_version=99)
    with CaptureQueriesContext(connection) as queries:
        result = binding.bind([*shared, (lost, other)], now)
    (read,) = _pending_reads(queries)
    assert f"IN ({shared[0][0].pk}, {shared[1][0].pk})" in read
    assert conflicts(result) == {lost.name: "run"}
    assert sorted(run.name for run, _ in result.bound) == sorted(run.name for run, _ in shared)
    assert result.usage[other.uid] == {"runs": 0}  # the loser's request given back
    with CaptureQueriesContext(connection) as queries:
        result = binding.bind([(last, other)], now)
    assert not _pending_reads(queries)
    assert [run.name for run, _ in result.bound] == [last.name]


def test_status_values_travel_as_parameters(batch):
    runs, assignments, now = batch
    odd = {"note": 'it\'s "quoted" \\ ; -- $1 %s ?'}
    Run.objects.filter(pk=runs["r1"].pk).update(status=odd)
    pod = assignments[0][1]
    result = binding.bind([(run, pod) for run in pending_runs(100) if run.name == "r1"], now)
    assert [run.name for run, _ in result.bound] == ["r1"]
    assert fresh(runs["r1"]).status["note"] == odd["note"]


def test_one_update_per_run_elsewhere_binds_the_same(batch, monkeypatch):
    runs, assignments, now = batch
    Run.objects.filter(pk=runs["r2"].pk).update(resource_version=99)
    monkeypatch.setattr(run_status, "connection", SimpleNamespace(vendor="mysql"))
    result = binding.bind(assignments, now)
    assert sorted(run.name for run, _ in result.bound) == ["r1", "r3", "r4", "r5"]
    assert conflicts(result) == {"r2": "run"}
    assert fresh(runs["r1"]).assigned_pod == "bash-a"
