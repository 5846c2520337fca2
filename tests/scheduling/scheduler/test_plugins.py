"""Each plugin's accept and reject cases, on hand-built snapshots."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduling.scheduler.framework import Framework
from scheduling.scheduler.plugins import (
    LeastLoaded,
    PreferredRunAffinity,
    RunAffinity,
    RuntimePodAvailability,
    default_plugins,
)
from tests.helpers.snapshots import placed, pod, preferred, required, run, snapshot

AVAILABILITY = RuntimePodAvailability()


@pytest.mark.parametrize(
    ("candidate", "request_", "expected"),
    [
        (pod("p"), {"runs": 1}, None),
        (pod("p", runs=2, used=1), {"runs": 1}, None),
        (pod("p", runs=2, used=2), {"runs": 1}, "AtCapacity"),
        (pod("p", runs=2, used=1), {"runs": 2}, "AtCapacity"),
        (pod("p", ready=False), {"runs": 1}, "NotReady"),
        (pod("p", phase="Pending"), {"runs": 1}, "NotReady"),
        (pod("p", heartbeat_age=15), {"runs": 1}, None),
        (pod("p", heartbeat_age=15.5), {"runs": 1}, "HeartbeatStale"),
        (pod("p", heartbeat_age=None), {"runs": 1}, "HeartbeatStale"),
        (pod("p"), {"runs": 1, "gpu": 1}, "MissingResource"),
        (pod("p", capacity={"runs": 4, "gpu": 1}), {"runs": 1, "gpu": 1}, None),
        (pod("p", capacity={"runs": 4, "gpu": 0}), {"runs": 1, "gpu": 1}, "ExceedsCapacity"),
        (pod("p"), {"runs": 0}, None),
        (pod("p", runs=2), {"runs": 3}, "ExceedsCapacity"),
        (pod("p", runs=2, used=2), {"runs": 3}, "ExceedsCapacity"),
        (pod("p", runs=3, used=1), {"runs": 3}, "AtCapacity"),
    ],
    ids=[
        "fits",
        "fits-last-slot",
        "full",
        "vector-too-big",
        "not-ready",
        "not-running",
        "heartbeat-at-15s",
        "heartbeat-stale",
        "never-heard",
        "missing-resource",
        "extra-resource-fits",
        "extra-resource-none",
        "zero-request",
        "bigger-than-the-pod",
        "bigger-than-a-busy-pod",
        "fits-once-free",
    ],
)
def test_availability_filter(candidate, request_, expected):
    the_run = run(requests=request_)
    assert AVAILABILITY.filter(the_run, candidate, snapshot([candidate]), {}) == expected


def test_fractional_request_fails_at_prefilter():
    verdict = AVAILABILITY.pre_filter(run(fractional=["runs"]), snapshot([]), {})
    assert verdict.fatal and verdict.reason == "FractionalResourceRequest"
    assert "runs" in verdict.message
    assert AVAILABILITY.pre_filter(run(), snapshot([]), {}) is None


def _affinity_filter(the_run, candidate, snap):
    plugin, state = RunAffinity(), {}
    plugin.pre_filter(the_run, snap, state)
    return plugin.filter(the_run, candidate, snap, state)


BUILD = {"job": "build"}


def test_required_affinity_follows_an_actual_target():
    snap = snapshot([pod("a"), pod("b")], placed("b", BUILD))
    the_run = run(affinity=required("runAffinity", BUILD))
    assert _affinity_filter(the_run, pod("a"), snap) == "AffinityMismatch"
    assert _affinity_filter(the_run, pod("b"), snap) is None


def test_required_affinity_follows_an_assumed_target():
    a, b = pod("a"), pod("b")
    snap = snapshot([a, b])
    snap.assume(run("seed", labels=BUILD), b)
    the_run = run(affinity=required("runAffinity", BUILD))
    assert _affinity_filter(the_run, a, snap) == "AffinityMismatch"
    assert _affinity_filter(the_run, b, snap) is None


def test_released_assumption_is_no_longer_a_target():
    a, b = pod("a"), pod("b")
    snap = snapshot([a, b])
    seed = run("seed", labels=BUILD)
    the_run = run(affinity=required("runAffinity", BUILD), labels={"other": "x"})
    snap.assume(seed, b)
    assert _affinity_filter(the_run, b, snap) is None
    snap.forget(seed, b)
    assert _affinity_filter(the_run, b, snap) == "NoAffinityTarget"
    assert b.used["runs"] == 0


def test_targets_in_other_namespaces_do_not_count():
    snap = snapshot([pod("a")], placed("a", BUILD, namespace="elsewhere"))
    the_run = run(affinity=required("runAffinity", BUILD))
    assert _affinity_filter(the_run, pod("a"), snap) == "NoAffinityTarget"


def test_bootstrap_seeds_only_when_own_labels_match():
    snap = snapshot([pod("a")])
    seeding = run(labels=BUILD, affinity=required("runAffinity", BUILD))
    assert _affinity_filter(seeding, pod("a"), snap) is None
    stranger = run(labels={"job": "test"}, affinity=required("runAffinity", BUILD))
    assert _affinity_filter(stranger, pod("a"), snap) == "NoAffinityTarget"


def test_anti_affinity_rejects_pods_with_matching_runs():
    snap = snapshot([pod("a"), pod("b")], placed("a", BUILD))
    the_run = run(affinity=required("runAntiAffinity", BUILD))
    assert _affinity_filter(the_run, pod("a"), snap) == "AntiAffinityViolation"
    assert _affinity_filter(the_run, pod("b"), snap) is None


def test_anti_affinity_counts_assumed_runs():
    a = pod("a")
    snap = snapshot([a])
    snap.assume(run("first", labels=BUILD), a)
    assert (
        _affinity_filter(run(affinity=required("runAntiAffinity", BUILD)), a, snap)
        == "AntiAffinityViolation"
    )


def test_every_required_term_must_hold():
    snap = snapshot(
        [pod("a"), pod("b")],
        placed("a", BUILD),
        placed("b", {"job": "lint"}),
        placed("b", BUILD, uid="x"),
    )
    the_run = run(affinity=required("runAffinity", BUILD, {"job": "lint"}))
    assert _affinity_filter(the_run, pod("a"), snap) == "AffinityMismatch"
    assert _affinity_filter(the_run, pod("b"), snap) is None


def test_preferred_affinity_scores_and_normalizes():
    snap = snapshot([pod("a"), pod("b"), pod("c")], placed("b", BUILD), placed("c", {"x": "1"}))
    plugin = PreferredRunAffinity()
    the_run = run(
        affinity={
            **preferred("runAffinity", (80, BUILD)),
            **preferred("runAntiAffinity", (20, {"x": "1"})),
        }
    )
    raw = {p: plugin.score(the_run, pod(p), snap, {}) for p in "abc"}
    # preferred weight where a target is, anti-affinity weight where none is
    assert raw == {"a": 20, "b": 100, "c": 0}
    assert plugin.normalize(raw) == {"a": 20, "b": 100, "c": 0}
    assert plugin.normalize({"a": 30, "b": 60}) == {"a": 50, "b": 100}
    assert plugin.normalize({"a": 0, "b": 0}) == {"a": 0, "b": 0}


@pytest.mark.parametrize(
    ("loads", "expected"),
    [
        ({"a": (1, 1)}, {"a": 100}),
        ({"a": (1, 1), "b": (2, 2)}, {"a": 100, "b": 0}),
        ({"a": (1, 1), "b": (2, 2), "c": (3, 3)}, {"a": 100, "b": 50, "c": 0}),
        ({"a": (1, 1), "b": (1, 1), "c": (3, 3)}, {"a": 100, "b": 100, "c": 0}),
        ({"a": (1, 1), "b": (1, 2), "c": (3, 3)}, {"a": 100, "b": 50, "c": 0}),
        ({"a": (1, 1), "b": (1, 1)}, {"a": 100, "b": 100}),
        (
            {"a": (1, 1), "b": (2, 2), "c": (2, 2), "d": (3, 3)},
            {"a": 100, "b": 66, "c": 66, "d": 0},
        ),
    ],
    ids=["one-pod", "two", "three", "tie-first", "sum-breaks-tie", "all-equal", "tie-middle"],
)
def test_least_loaded_normalizes_by_rank(loads, expected):
    assert LeastLoaded().normalize(loads) == expected


def test_least_loaded_load_is_the_highest_projected_ratio_then_the_sum():
    plugin = LeastLoaded()
    gpu = "example.com/gpu"
    the_run = run(requests={"runs": 1, gpu: 1})
    capacity = {"runs": 4, gpu: 4}

    def load(runs_used: int, gpu_used: int):
        candidate = pod("p", capacity=capacity)
        candidate.used = {"runs": runs_used, gpu: gpu_used}
        return plugin.score(the_run, candidate, snapshot([]), {})

    assert load(0, 2) == (Fraction(3, 4), Fraction(1))  # gpu 3/4, runs 1/4
    # a busy gpu weighs like busy runs of the same ratio ...
    assert load(0, 2) == load(2, 0)
    # ... and more only where its highest ratio is higher
    assert load(0, 3) > load(2, 0)
    # the same highest ratio: the sum decides
    assert load(2, 1) > load(2, 0)
    # a resource the Run does not request does not count
    assert plugin.score(run(), pod("p", capacity=capacity), snapshot([]), {}) == (
        Fraction(1, 4),
        Fraction(1, 4),
    )


def test_busiest_single_resource_decides_the_pod():
    gpu = "example.com/gpu"
    capacity = {"runs": 4, gpu: 4}
    pods = [pod("a", capacity=capacity), pod("b", capacity=capacity)]
    pods[0].used = {"runs": 0, gpu: 3}  # gpu 4/4 after placing
    pods[1].used = {"runs": 2, gpu: 1}  # runs 3/4, gpu 2/4
    chosen = Framework(default_plugins()).schedule_one(
        run(requests={"runs": 1, gpu: 1}), snapshot(pods)
    )
    assert chosen.pod.name == "b"  # more in use in all, but no resource as full as a's gpu


def test_framework_picks_best_and_ties_to_smallest_name():
    framework = Framework(default_plugins())
    pods = [pod("c"), pod("a"), pod("b")]
    assert framework.schedule_one(run(), snapshot(pods)).pod.name == "a"
    loaded = [pod("a", runs=4, used=2), pod("b", runs=4, used=0)]
    assert framework.schedule_one(run(), snapshot(loaded)).pod.name == "b"


@pytest.mark.parametrize(("preferred_pod", "chosen"), [("a", "a"), ("b", "a")])
def test_preferred_weight_100_and_a_pod_half_as_loaded_weigh_equally(preferred_pod, chosen):
    framework = Framework(default_plugins())
    # after placing: the preferred pod runs 4/8, the other 2/8 (half as loaded)
    light, busy = ("b", "a") if preferred_pod == "a" else ("a", "b")
    pods = [pod(busy, runs=8, used=3), pod(light, runs=8, used=1)]
    snap = snapshot(pods, placed(preferred_pod, BUILD))
    the_run = run(affinity=preferred("runAffinity", (100, BUILD)))
    state: dict = {}
    assert framework.totals(the_run, pods, snap, state) == {"a": 100, "b": 100}
    # equal totals: the smallest name, whichever pod has the affinity target
    assert framework.schedule_one(the_run, snap).pod.name == chosen


def test_preferred_and_least_loaded_scores_add_up():
    framework = Framework(default_plugins())
    pods = [pod("a", runs=4, used=2), pod("b", runs=4, used=0), pod("c", runs=4, used=1)]
    snap = snapshot(pods, placed("a", BUILD))
    the_run = run(affinity=preferred("runAffinity", (1, BUILD)))
    # affinity a 100, b 0, c 0; least loaded b 100, c 50, a 0
    assert framework.totals(the_run, pods, snap, {}) == {"a": 100, "b": 100, "c": 50}
    assert framework.schedule_one(the_run, snap).pod.name == "a"


def test_a_plugin_scoring_outside_the_range_is_refused():
    class Broken(LeastLoaded):
        def normalize(self, scores):
            return dict.fromkeys(scores, 101)

    pods = [pod("a"), pod("b")]
    with pytest.raises(ValueError, match="outside 0..100"):
        Framework([Broken()]).schedule_one(run(), snapshot(pods))


def test_pending_message_is_bounded_and_counts_per_reason():
    framework = Framework(default_plugins())
    pods = [pod("a", used=2), pod("b", used=2), pod("c")]
    snap = snapshot(pods, placed("c", BUILD))
    decision = framework.schedule_one(run(affinity=required("runAntiAffinity", BUILD)), snap)
    assert decision.pod is None
    assert decision.message == "0/3 pods: 2 at capacity, 1 violates runAntiAffinity"
    for name in ("a", "b", "c", "uid-"):
        assert f" {name} " not in decision.message


def test_no_pods_for_the_runtime():
    decision = Framework(default_plugins()).schedule_one(
        run(runtime="python"), snapshot([pod("a")])
    )
    assert decision.pod is None and decision.message.startswith("0/0 pods")


def test_pending_message_agrees_in_number():
    from collections import Counter

    from scheduling.scheduler.framework import pending_message

    message = pending_message(
        3,
        Counter(
            {("RuntimePodAvailability", "NotReady"): 1, ("RunAffinity", "AffinityMismatch"): 2}
        ),
    )
    assert message == "0/3 pods: 2 do not match runAffinity, 1 is not ready"


def test_a_request_no_pod_can_ever_hold_says_so():
    pods = [pod("a", runs=2), pod("b", runs=2, used=2), pod("c", runs=8, used=8)]
    decision = Framework(default_plugins()).schedule_one(run(requests={"runs": 4}), snapshot(pods))
    assert decision.message == (
        "0/3 pods: 2 have less capacity than the Run requests, 1 at capacity"
    )


def test_a_subclass_that_normalises_otherwise_is_not_taken_at_its_lowest_raw_score():
    class Reversed(LeastLoaded):  # the most loaded pod scores highest
        def normalize(self, scores):
            return {name: 100 - value for name, value in super().normalize(scores).items()}

    pods = [pod("a", runs=4, used=3), pod("b", runs=4, used=0)]
    assert Framework([LeastLoaded()]).schedule_one(run(), snapshot(pods)).pod.name == "b"
    assert Framework([Reversed()]).schedule_one(run(), snapshot(pods)).pod.name == "a"
