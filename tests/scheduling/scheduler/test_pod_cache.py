"""The scheduler's pod cache: the pods a pass works on, kept across passes and read again
only where they changed, are the pods a fresh read gives, after any write of their rows, any
heartbeat and any pass; a pass with nothing changed reads no pod row at all."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling import pod_writer, run_status
from scheduling import pods as pod_rows
from scheduling.models import Run, RunPhase, RuntimePod
from scheduling.scheduler import PassOptions, default_framework, run_pass
from scheduling.scheduler.loading import take_snapshot
from scheduling.scheduler.pod_cache import PodCache
from scheduling.scheduler.usage_cache import UsageCache
from tests.helpers.examples import examples
from tests.helpers.records import fresh, make_pod, make_run, make_runtime
from tests.helpers.snapshots import run as pending

pytestmark = pytest.mark.django_db


@pytest.fixture
def framework():
    make_runtime()
    return default_framework()


def schedule(framework, now=None):
    return run_pass(framework, now or timezone.now(), PassOptions())


def pending_message(name: str) -> str:
    return Run.objects.get(name=name).status.get("message", "")


def version(pod: RuntimePod) -> int:
    return RuntimePod.objects.get(pk=pod.pk).resource_version


def write(pod: RuntimePod, **fields) -> None:
    pod_writer.update_where(RuntimePod.objects.filter(pk=pod.pk), **fields)


# --- passes with a warm cache ---------------------------------------------------------------


def test_a_pass_with_nothing_changed_reads_no_pod_row(framework):
    for index in range(3):
        make_pod(f"bash-{index}", runs=5)
    make_run("r0")
    schedule(framework)
    make_run("r1")
    with CaptureQueriesContext(connection) as queries:
        assert schedule(framework).bound == 1
    reads = [q["sql"] for q in queries if '"scheduling_runtimepod"' in q["sql"]]
    # the count and highest version, and the bind's lock of the one pod it binds to
    assert len(reads) == 2, reads
    assert "MAX(" in reads[0] and '"scheduling_runtimepod"."id" IN (' in reads[1]
    assert framework.pod_cache.reloads == 1


def test_a_pass_reads_again_only_the_pods_changed_since_the_last(framework, monkeypatch):
    from scheduling.scheduler import pod_cache

    pods = [make_pod(f"bash-{index}", runs=5) for index in range(3)]
    schedule(framework)
    seen = framework.pod_cache.version
    write(pods[1], capacity={"runs": 7})
    assert version(pods[1]) > seen
    read = []
    real = pod_cache.read_pods
    monkeypatch.setattr(pod_cache, "read_pods", lambda q: read.append(real(q)) or read[-1])
    schedule(framework)
    assert [[pod.name for pod in batch] for batch in read] == [["bash-1"]]
    assert framework.pod_cache.rows[pods[1].pk].capacity == {"runs": 7}
    assert framework.pod_cache.reloads == 1 and framework.pod_cache.version == version(pods[1])


def test_the_queries_of_a_pass_do_not_grow_with_the_pods(framework):
    def queries_of_a_pass(pods: int) -> int:
        pod_writer.delete_where(RuntimePod.objects.all())
        for index in range(pods):
            make_pod(f"bash-{pods}-{index}", runs=5)
        schedule(framework)  # the cache reads the new pods
        make_run(f"r-{pods}")
        with CaptureQueriesContext(connection) as queries:
            assert schedule(framework).bound == 1
        return len(queries)

    queries_of_a_pass(1)  # the counters' rows are made at their first use
    assert queries_of_a_pass(2) == queries_of_a_pass(40)


def test_a_pod_made_unready_then_ready_again_is_seen_by_the_next_pass(framework):
    pod = make_pod("bash-a", runs=5)
    schedule(framework)
    write(pod, ready=False)
    make_run("r0")
    assert schedule(framework).bound == 0
    assert pending_message("r0") == "0/1 pods: 1 is not ready"
    write(pod, ready=True)
    assert schedule(framework).bound == 1


def test_capacity_a_heartbeat_brings_is_seen_by_the_next_pass(framework):
    from portal.machinery import store
    from tests.helpers.operator import OPERATOR
    from tests.helpers.records import RUNTIMES

    pod = make_pod("bash-a", runs=1)
    make_run("r0")
    make_run("r1")
    assert schedule(framework).bound == 1
    store.patch(
        RUNTIMES,
        "default",
        "bash",
        {"spec": {"capacity": {"resources": {"runs": 2}}}},
        context=OPERATOR,
    )
    beat = {"namespace": "default", "podName": "bash-a", "podUID": str(pod.uid)}
    pod_rows.record_heartbeat({**beat, "time": timezone.now().isoformat()}, timezone.now())
    assert schedule(framework).bound == 1


def test_a_silent_pod_is_stale_and_its_next_heartbeat_brings_it_back(framework):
    pod = make_pod("bash-a", runs=5)
    schedule(framework)
    before = version(pod)
    silent_since = timezone.now() - timedelta(seconds=30)
    write(pod, last_heartbeat=silent_since)
    make_run("r0")
    assert schedule(framework).bound == 0
    assert pending_message("r0") == "0/1 pods: 1 has no recent runtimed heartbeat"
    write(pod, last_heartbeat=timezone.now())
    assert schedule(framework).bound == 1
    assert version(pod) == before  # freshness is read by time, not by version


def test_a_cached_heartbeat_going_old_does_not_make_a_heard_pod_stale(framework):
    make_pod("bash-a", runs=5, heartbeat_age=10)
    schedule(framework)
    RuntimePod.objects.update(last_heartbeat=timezone.now() + timedelta(seconds=60))
    make_run("r0")
    # an hour on: the heartbeat the cache read is old, the one in the row is not
    assert schedule(framework, timezone.now() + timedelta(seconds=65)).bound == 1


def test_pods_that_go_or_come_are_seen_by_the_next_pass(framework):
    a = make_pod("bash-a", runs=1)
    schedule(framework)
    pod_writer.delete_where(RuntimePod.objects.filter(pk=a.pk))
    make_run("r0")
    assert schedule(framework).bound == 0
    assert pending_message("r0") == "0/0 pods: no Runtime Pods for this Runtime in this namespace"
    make_pod("bash-b", runs=1)
    assert schedule(framework).bound == 1
    assert fresh(Run.objects.get(name="r0")).assigned_pod == "bash-b"
    # replaced under the same name between two passes
    pod_writer.delete_where(RuntimePod.objects.filter(name="bash-b"))
    make_pod("bash-b", runs=1)
    make_run("r1")
    assert schedule(framework).bound == 1
    assert Run.objects.get(name="r1").assigned_pod_uid == str(RuntimePod.objects.get().uid)


def test_a_pass_excluding_a_pod_leaves_it_to_the_next_pass_as_its_row_says(framework):
    pod = make_pod("bash-a", runs=5)
    schedule(framework)
    snapshot = take_snapshot(timezone.now(), cache=framework.usage_cache, pods=framework.pod_cache)
    state = snapshot.pods_by_key["default", "bash-a"]
    snapshot.exclude(state)  # a bind found it stale
    snapshot.assume(pending("x"), state)
    make_run("r0")
    assert schedule(framework).bound == 1
    assert framework.pod_cache.index.by_key["default", "bash-a"].used == {"runs": 1}
    assert pod.pk in framework.pod_cache.rows


def test_usage_that_other_writers_free_is_seen_by_the_next_pass(framework):
    make_pod("bash-a", runs=1)
    first = make_run("r0")
    assert schedule(framework).bound == 1
    make_run("r1")
    assert schedule(framework).bound == 0
    done = fresh(first)
    assert run_status.write(
        done, run_status.finished(done.status, RunPhase.SUCCEEDED, "", "", timezone.now(), 1)
    )
    assert schedule(framework).bound == 1


def test_a_resync_reads_every_pod_again():
    make_runtime()
    make_pod("bash-a")
    framework = default_framework()
    framework.pod_cache = PodCache(resync_seconds=0)
    schedule(framework)
    schedule(framework)
    assert framework.pod_cache.reloads == 2


# --- the cache against a fresh read, after anything ---------------------------------------

POD_NAMES = ["p0", "p1", "p2"]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(POD_NAMES), st.integers(1, 3)),
        st.tuples(st.just("delete"), st.sampled_from(POD_NAMES), st.just(0)),
        st.tuples(st.just("ready"), st.sampled_from(POD_NAMES), st.integers(0, 1)),
        st.tuples(st.just("phase"), st.sampled_from(POD_NAMES), st.integers(0, 1)),
        st.tuples(st.just("capacity"), st.sampled_from(POD_NAMES), st.integers(0, 3)),
        st.tuples(st.just("silent"), st.sampled_from(POD_NAMES), st.integers(0, 40)),
        st.tuples(st.just("run"), st.sampled_from(POD_NAMES), st.integers(0, 1)),
        st.tuples(st.just("finish"), st.sampled_from(POD_NAMES), st.just(0)),
        st.tuples(st.just("pass"), st.just(""), st.just(0)),
    ),
    max_size=25,
)


def _pods(snapshot) -> dict:
    return {
        key: (pod.pk, pod.uid, pod.ready, pod.phase, pod.capacity, pod.used, snapshot.stale(pod))
        for key, pod in snapshot.pods_by_key.items()
    }


def _order(snapshot) -> dict:
    return {
        group: [(pod.name, pod.ready) for pod in order.pods]
        for group, order in snapshot.by_runtime.items()
        if order.pods
    }


def _apply(step, now, counter):
    action, name, value = step
    pods = RuntimePod.objects.filter(name=name)
    if action == "create" and not pods.exists():
        make_pod(name, runs=value)
    elif action == "delete":
        pod_writer.delete_where(pods)
    elif action == "ready":
        pod_writer.update_where(pods, ready=bool(value))
    elif action == "phase":
        pod_writer.update_where(pods, phase=["Running", "Terminating"][value])
    elif action == "capacity":
        pod_writer.update_where(pods, capacity={"runs": value})
    elif action == "silent":
        pod_writer.update_where(pods, last_heartbeat=now - timedelta(seconds=value))
    elif action == "run":
        pod = pods.first()
        if pod is not None:
            counter[0] += 1
            run = make_run(f"r{counter[0]}")
            Run.objects.filter(pk=run.pk).update(phase=RunPhase.PENDING)
            status = run_status.scheduled(run.status, pod.name, str(pod.uid), now, 1)
            run_status.write(fresh(run), status, run_status.BIND)
    elif action == "finish":
        active = Run.objects.filter(assigned_pod=name, phase=RunPhase.SCHEDULED).first()
        if active is not None:
            run_status.write(
                active,
                run_status.finished(active.status, RunPhase.SUCCEEDED, "", "", now, 1),
            )


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps)
def test_the_cached_pods_are_the_pods_a_fresh_read_gives(script):
    pod_writer.delete_where(RuntimePod.objects.all())
    Run.objects.all().delete()
    make_runtime_once()
    usage, pods = UsageCache(resync_seconds=3600), PodCache(resync_seconds=3600)
    now = timezone.now()
    counter = [0]
    for step in [*script, ("pass", "", 0)]:
        if step[0] != "pass":
            _apply(step, now, counter)
            continue
        cached = take_snapshot(now, cache=usage, pods=pods)
        expected = take_snapshot(now)
        assert _pods(cached) == _pods(expected)
        assert _order(cached) == _order(expected)
        # what a pass does to the pods it works on is undone by the next
        for state in list(cached.pods_by_key.values())[:1]:
            cached.assume(pending("assumed"), state)
            cached.exclude(state)


def make_runtime_once():
    from scheduling.models import Runtime

    if not Runtime.objects.filter(name="bash").exists():
        make_runtime()
