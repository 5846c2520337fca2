"""The scheduler's usage cache: pod usage kept across passes from the Run watch events equals
what summing every active Run says, after binds, completions and deletions; a pass with
nothing changed reads no Run at all."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.machinery import store
from scheduling import run_status
from scheduling.models import Run, RunPhase
from scheduling.scheduler import PassOptions, default_framework, run_pass
from scheduling.scheduler.usage import active_usage
from scheduling.scheduler.usage_cache import UsageCache
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNS, fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


def full() -> dict:
    found = active_usage(Run.objects.all(), "namespace", "assigned_pod", "assigned_pod_uid")
    return {key: used for key, used in found.items() if any(used.values())}


@pytest.fixture
def framework():
    make_runtime()
    framework = default_framework()
    framework.usage_cache = UsageCache(resync_seconds=3600)
    return framework


def schedule(framework):
    return run_pass(framework, timezone.now(), PassOptions())


def test_binds_completions_and_deletions_reach_the_cache(framework):
    make_pod("bash-a", runs=3)
    make_pod("bash-b", runs=3)
    runs = [make_run(f"r{i}") for i in range(4)]
    assert schedule(framework).bound == 4
    cache = framework.usage_cache
    assert cache.current() == full() and sum(u["runs"] for u in full().values()) == 4
    done = fresh(runs[0])
    assert run_status.write(
        done, run_status.finished(done.status, RunPhase.SUCCEEDED, "", "", timezone.now(), 1)
    )
    assert cache.current() == full()
    assert sum(u["runs"] for u in cache.current().values()) == 3
    # a bound Run being deleted stays active until its pod stops it; the finished one goes
    store.delete(RUNS, namespace="default", name="r1", context=OPERATOR)
    store.delete(RUNS, namespace="default", name="r0", context=OPERATOR)
    assert cache.current() == full()
    assert sum(u["runs"] for u in cache.current().values()) == 3
    assert cache.rebuilds == 1  # caught up from events, never rebuilt


def test_usage_read_from_the_cache_keeps_capacity(framework):
    make_pod("bash-a", runs=2)
    make_run("r0")
    assert schedule(framework).bound == 1
    make_run("r1")
    make_run("r2")
    assert schedule(framework).bound == 1  # one slot was left
    assert Run.objects.filter(phase=RunPhase.PENDING).count() == 1


def test_a_pass_with_nothing_changed_reads_no_run_usage(framework):
    make_pod("bash-a", runs=5)
    for i in range(3):
        make_run(f"r{i}")
    schedule(framework)
    cache = framework.usage_cache
    cache.current()
    with CaptureQueriesContext(connection) as queries:
        cache.current()
    assert len(queries.captured_queries) == 1  # the counter row


def test_compacted_history_rebuilds(framework):
    make_pod("bash-a", runs=5)
    make_run("r0")
    schedule(framework)
    cache = framework.usage_cache
    cache.current()
    from portal.models import ResourceVersionCounter

    ResourceVersionCounter.objects.filter(pk=1).update(compacted_through=cache.cursor + 1)
    make_run("r1")
    cache.current()
    assert cache.rebuilds == 2


def test_a_cache_that_counted_too_little_costs_one_conflict_then_is_read_anew(framework):
    pod = make_pod("bash-a", runs=1)
    cache = framework.usage_cache
    assert cache.current() == {}  # built: the pod is empty
    # a Run made active on the pod by a write that records no watch event (as a restore from
    # a backup might): the cache still thinks the pod is empty
    ghost = make_run("ghost")
    Run.objects.filter(pk=ghost.pk).update(
        phase=RunPhase.RUNNING, assigned_pod=pod.name, assigned_pod_uid=str(pod.uid)
    )
    make_run("r1")
    first = schedule(framework)
    assert first.bound == 0 and first.conflicts == 1  # the bind re-read the pod: it is full
    assert Run.objects.get(name="r1").phase == RunPhase.PENDING
    rebuilds = cache.rebuilds
    second = schedule(framework)
    assert cache.rebuilds == rebuilds + 1
    assert second.conflicts == 0 and second.bound == 0  # now it knows: no bind is tried
    assert cache.current() == full()


def test_a_rebuild_freezes_what_survives_a_collection_and_thaws_it_at_the_next(settings):
    import gc

    settings.KRUNTIMES_SCHEDULER_GC_FREEZE = True
    cache = default_framework().usage_cache
    assert cache.freeze
    make_runtime()
    make_pod("bash-a")
    gc.unfreeze()
    try:
        cache.rebuild()
        frozen = gc.get_freeze_count()
        assert frozen > 0  # the process's live objects, the cache's entries among them
        assert gc.get_count()[2] == 0  # nothing left for the oldest generation to walk
        cache.rebuild()  # thawed, collected, frozen again: not piled onto the last freeze
        assert 0 < gc.get_freeze_count() < 2 * frozen
    finally:
        gc.unfreeze()


def test_the_freeze_is_off_unless_asked(settings):
    settings.KRUNTIMES_SCHEDULER_GC_FREEZE = False
    assert not default_framework().usage_cache.freeze
    assert not UsageCache().freeze
