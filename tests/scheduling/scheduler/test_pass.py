"""A scheduling pass against the database: bind, capacity, messages, bootstrap, races."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from scheduling.models import Run, RuntimePod
from scheduling.scheduler import PassOptions, default_framework, run_pass
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNS, fresh, make_pod, make_run, make_runtime, required

pytestmark = pytest.mark.django_db


def schedule(**options):
    return run_pass(default_framework(), timezone.now(), PassOptions(**options))


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


def test_binds_a_pending_run_to_a_ready_pod():
    pod = make_pod("bash-a")
    run = make_run("r1")
    result = schedule()
    assert (result.bound, result.conflicts) == (1, 0)
    bound = fresh(run)
    assert bound.phase == "Scheduled"
    assert (bound.assigned_pod, bound.assigned_pod_uid) == ("bash-a", str(pod.uid))
    assert bound.status["assignedPodUID"] == str(pod.uid)
    assert bound.resource_version == run.resource_version + 1
    scheduled = next(c for c in bound.status["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("True", "Assigned")


def test_capacity_is_respected_and_the_rest_stays_pending_with_a_message():
    make_pod("bash-a", runs=2)
    runs = [make_run(f"r{i}") for i in range(3)]
    assert schedule().bound == 2
    pending = [fresh(r) for r in runs if fresh(r).phase == "Pending"]
    assert len(pending) == 1
    assert pending[0].status["message"] == "0/1 pods: 1 at capacity"
    condition = next(c for c in pending[0].status["conditions"] if c["type"] == "Scheduled")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")


def test_pending_message_is_written_only_when_it_changes():
    make_pod("bash-a", runs=0)
    run = make_run("r1")
    schedule()
    version = fresh(run).resource_version
    schedule()
    assert fresh(run).resource_version == version


def test_no_pods_message():
    run = make_run("r1")
    schedule()
    assert fresh(run).status["message"].startswith("0/0 pods")


def test_not_ready_and_stale_pods_are_not_used():
    make_pod("bash-a", ready=False)
    make_pod("bash-b", heartbeat_age=30)
    run = make_run("r1")
    schedule()
    assert (
        fresh(run).status["message"]
        == "0/2 pods: 1 has no recent runtimed heartbeat, 1 is not ready"
    )


def test_fractional_request_fails_with_a_reason_instead_of_looping():
    make_pod("bash-a")
    run = make_run("r1", resources={"requests": {"runs": "500m"}})
    result = schedule()
    assert result.failed == 1
    failed = fresh(run)
    assert failed.phase == "Failed"
    assert failed.status["reason"] == "FractionalResourceRequest"
    assert "runs" in failed.status["message"]


def test_whole_quantities_with_suffixes_are_not_fractional():
    make_pod("bash-a", runs=2, memory=2 * 1024**3)
    run = make_run("r1", resources={"requests": {"runs": 1, "memory": "1Gi"}})
    assert schedule().bound == 1 and fresh(run).phase == "Scheduled"


def test_cancelling_a_pending_run_makes_it_cancelled():
    run = make_run("r1")
    store.patch(RUNS, "default", "r1", {"spec": {"cancelRequested": True}}, context=OPERATOR)
    assert schedule().cancelled == 1
    assert fresh(run).phase == "Cancelled"
    assert fresh(run).status["reason"] == "Cancelled"


def test_affinity_cohort_bootstraps_onto_one_pod():
    for name in ("bash-a", "bash-b", "bash-c"):
        make_pod(name, runs=5)
    cohort = {"cohort": "build"}
    runs = [
        make_run(f"r{i}", labels=cohort, affinity=required("runAffinity", cohort)) for i in range(4)
    ]
    assert schedule().bound == 4
    assert {fresh(r).assigned_pod for r in runs} == {"bash-a"}


def test_two_runs_requiring_only_each_other_both_stay_pending():
    make_pod("bash-a", runs=5)
    a = make_run("a", labels={"x": "a"}, affinity=required("runAffinity", {"x": "b"}))
    b = make_run("b", labels={"x": "b"}, affinity=required("runAffinity", {"x": "a"}))
    assert schedule().bound == 0
    for run in (a, b):
        assert fresh(run).phase == "Pending"
        assert fresh(run).status["message"] == "0/1 pods: 1 waits for a runAffinity target"


def test_anti_affinity_spreads_and_blocks_when_full():
    make_pod("bash-a", runs=5)
    make_pod("bash-b", runs=5)
    group = {"spread": "x"}
    runs = [
        make_run(f"r{i}", labels=group, affinity=required("runAntiAffinity", group))
        for i in range(3)
    ]
    assert schedule().bound == 2
    assert sorted(fresh(r).assigned_pod for r in runs if fresh(r).assigned_pod) == [
        "bash-a",
        "bash-b",
    ]
    blocked = next(fresh(r) for r in runs if fresh(r).phase == "Pending")
    assert blocked.status["message"] == "0/2 pods: 2 violate runAntiAffinity"


def test_affinity_follows_an_actual_target_from_an_earlier_pass():
    make_pod("bash-a", runs=5)
    make_pod("bash-b", runs=5)
    first = make_run("first", labels={"job": "build"})
    schedule()
    target = fresh(first).assigned_pod
    later = make_run("later", affinity=required("runAffinity", {"job": "build"}))
    schedule()
    assert fresh(later).assigned_pod == target


def test_priority_then_creation_order():
    make_pod("bash-a", runs=1)
    low = make_run("low")
    high = make_run("high", annotations={"scheduling.kruntimes.io/priority": "10"})
    schedule()
    assert (fresh(high).phase, fresh(low).phase) == ("Scheduled", "Pending")


def test_queue_paging_reaches_runs_behind_unschedulable_ones():
    make_pod("bash-a", runs=5)
    stuck = [make_run(f"stuck{i}", runtime="python") for i in range(5)]
    ok = make_run("ok")
    result = schedule(page_size=2)
    assert result.considered == 6 and fresh(ok).phase == "Scheduled"
    assert all(fresh(r).phase == "Pending" for r in stuck)


def test_a_run_changed_after_the_snapshot_is_not_bound_and_is_requeued(monkeypatch):
    from scheduling.scheduler import bind as binding

    make_pod("bash-a")
    run = make_run("r1")
    real_bind = binding.bind

    def racing_bind(assignments, now, *ledger):
        Run.objects.filter(pk=run.pk).update(resource_version=99)  # someone wrote meanwhile
        return real_bind(assignments, now, *ledger)

    monkeypatch.setattr(binding, "bind", racing_bind)
    result = schedule()
    assert (result.bound, result.conflicts) == (0, 1)
    assert fresh(run).phase == "Pending"
    monkeypatch.setattr(binding, "bind", real_bind)
    assert schedule().bound == 1


def test_a_pod_replaced_after_the_snapshot_is_not_used(monkeypatch):
    import uuid

    from scheduling.scheduler import bind as binding

    pod = make_pod("bash-a")
    run = make_run("r1")
    real_bind = binding.bind

    def replaced_pod_bind(assignments, now, *ledger):
        RuntimePod.objects.filter(pk=pod.pk).update(uid=uuid.uuid4())  # same name, new pod
        return real_bind(assignments, now, *ledger)

    monkeypatch.setattr(binding, "bind", replaced_pod_bind)
    assert schedule().conflicts == 1
    assert fresh(run).phase == "Pending"


def test_capacity_taken_by_another_scheduler_is_seen_at_bind(monkeypatch):
    from scheduling.scheduler import bind as binding

    pod = make_pod("bash-a", runs=1)
    run = make_run("r1")
    other = make_run("other")
    real_bind = binding.bind

    def competing_bind(assignments, now, *ledger):
        from scheduling import run_status

        status = run_status.scheduled({}, pod.name, str(pod.uid), now, 1)
        Run.objects.filter(pk=other.pk).update(status=status, **Run.status_columns(status))
        return real_bind([a for a in assignments if a[0].pk == run.pk], now, *ledger)

    monkeypatch.setattr(binding, "bind", competing_bind)
    result = schedule()
    assert result.bound == 0 and fresh(run).phase == "Pending"
