"""The pass's PodLedger: a later batch on a pod the pass already bound to takes the usage the
pass left there instead of re-reading the pod's Runs, unless the BindEpoch moved past the
pass's last bind (another binder) or the pod was replaced; a pod never goes over capacity
either way."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.models import BindEpoch, Run, RunPhase
from scheduling.scheduler import bind as binding
from scheduling.scheduler.loading import pending_runs, take_snapshot
from tests.helpers.records import fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def pod():
    make_runtime()
    make_pod("bash-a", runs=3)
    return take_snapshot(timezone.now()).pods_by_key["default", "bash-a"]


def _usage_reads(queries) -> int:
    """The reads of what active Runs use on the locked pods."""
    return sum(
        1
        for q in queries
        if q["sql"].startswith("SELECT") and '"scheduling_run"' in q["sql"] and "COUNT(" in q["sql"]
    )


def _bind(names, pod, ledger):
    for name in names:
        make_run(name)
    runs = [run for run in pending_runs(100) if run.name in names]
    with CaptureQueriesContext(connection) as queries:
        result = binding.bind([(run, pod) for run in runs], timezone.now(), ledger)
    return result, queries.captured_queries


def test_each_bind_takes_the_next_epoch_and_the_ledger_keeps_what_it_left(pod):
    ledger = binding.PodLedger()
    result, queries = _bind(["r1"], pod, ledger)
    assert [run.name for run, _ in result.bound] == ["r1"]
    assert _usage_reads(queries) == 1  # first time here: read
    first = BindEpoch.objects.get(pk=1).value
    assert (ledger.epoch, ledger.pods[pod.pk]) == (first, (pod.uid, {"runs": 1}))
    _bind(["r2"], pod, ledger)
    assert BindEpoch.objects.get(pk=1).value == ledger.epoch == first + 1


def test_a_later_batch_on_the_same_pod_reads_no_usage(pod):
    ledger = binding.PodLedger()
    _bind(["r1"], pod, ledger)
    result, queries = _bind(["r2", "r3"], pod, ledger)
    assert sorted(run.name for run, _ in result.bound) == ["r2", "r3"]
    assert _usage_reads(queries) == 0
    assert result.usage == {pod.uid: {"runs": 3}}
    # full by the ledger: what the pod runs is read, and it is full
    result, queries = _bind(["r4"], pod, ledger)
    assert [(run.name, stage) for run, _, stage in result.conflicts] == [("r4", "capacity")]
    assert _usage_reads(queries) == 1 and fresh(Run.objects.get(name="r4")).phase == "Pending"


def test_a_ledger_counting_runs_that_ended_since_reads_the_pod_before_refusing(pod):
    """The ledger is what the binds left: Runs that end later make it too high. When it says a
    batch does not fit, the pod's Runs are read, and the room they left is used."""
    ledger = binding.PodLedger()
    _bind(["r1", "r2", "r3"], pod, ledger)
    Run.objects.filter(name="r2").update(phase=RunPhase.SUCCEEDED)
    result, queries = _bind(["r4"], pod, ledger)
    assert [run.name for run, _ in result.bound] == ["r4"] and not result.conflicts
    assert _usage_reads(queries) == 1
    assert ledger.pods[pod.pk] == (pod.uid, {"runs": 3})


def test_another_binder_between_batches_makes_the_pod_read_again(pod):
    ledger = binding.PodLedger()
    _bind(["r1"], pod, ledger)
    # someone else binds two Runs here (their bind takes an epoch, as every bind does)
    for name in ("x1", "x2"):
        other = make_run(name)
        Run.objects.filter(pk=other.pk).update(
            phase="Scheduled", assigned_pod="bash-a", assigned_pod_uid=pod.uid
        )
    BindEpoch.objects.filter(pk=1).update(value=F("value") + 1)
    result, queries = _bind(["r2", "r3"], pod, ledger)
    assert _usage_reads(queries) == 1
    assert [run.name for run, _ in result.bound] == []  # 1 + 2 already: full
    assert sorted(stage for _, _, stage in result.conflicts) == ["capacity", "capacity"]
    active = Run.objects.filter(assigned_pod="bash-a", phase="Scheduled").count()
    assert active == 3


def test_a_replaced_pod_is_read_again(pod):
    ledger = binding.PodLedger()
    _bind(["r1"], pod, ledger)
    _, usage = ledger.pods[pod.pk]
    ledger.pods[pod.pk] = ("00000000-0000-0000-0000-000000000000", usage)
    _, queries = _bind(["r2"], pod, ledger)
    assert _usage_reads(queries) == 1


def test_without_a_ledger_every_batch_reads(pod):
    _, first = _bind(["r1"], pod, None)
    _, second = _bind(["r2"], pod, None)
    assert (_usage_reads(first), _usage_reads(second)) == (1, 1)


def test_a_scheduler_keeps_its_ledger_from_one_pass_to_the_next(pod):
    from scheduling.scheduler import default_framework, run_pass

    framework = default_framework()
    make_run("r1")
    run_pass(framework, timezone.now())
    make_run("r2")
    with CaptureQueriesContext(connection) as queries:
        assert run_pass(framework, timezone.now()).bound == 1
    assert _usage_reads(queries) == 0
    assert framework.ledger.pods[pod.pk] == (pod.uid, {"runs": 2})
