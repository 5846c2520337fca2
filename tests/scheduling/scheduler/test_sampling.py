"""Filter stops after enough feasible pods and Score ranks that sample; candidates are walked
least loaded first. On pools no larger than the minimum the sampled framework decides exactly
as the full one does."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduling.scheduler.framework import Framework, Plugin, pods_to_find
from scheduling.scheduler.plugins import LeastLoaded, default_plugins
from tests.helpers.snapshots import placed, pod, preferred, run, snapshot


def test_pods_to_find_follows_kube_scheduler():
    assert pods_to_find(40, 5) == 40  # at most the minimum: every pod
    assert pods_to_find(1000, 100) == 1000
    assert pods_to_find(1000, 5) == 50  # 5% of 1000 is the minimum
    assert pods_to_find(5000, 5) == 250
    assert pods_to_find(1000, 0) == 420  # adaptive: 50% - 1000/125 %
    assert pods_to_find(100_000, 0) == 5000  # adaptive never below 5%
    assert pods_to_find(200, 5, minimum=10) == 10


class CountingFilter(Plugin):
    name = "Counting"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def filter(self, run, pod, snapshot, state):
        self.asked.append(pod.name)
        return None


def test_filter_stops_after_enough_feasible_pods():
    counting = CountingFilter()
    pods = [pod(f"p{i:03d}", runs=4) for i in range(200)]
    decision = Framework(
        [counting], percentage_of_pods_to_score=5, min_pods_to_score=20
    ).schedule_one(run(), snapshot(pods))
    assert len(counting.asked) == 20
    assert decision.pod is not None


def test_without_a_feasible_pod_every_pod_is_counted_in_the_message():
    pods = [pod(f"p{i:03d}", runs=1, used=1) for i in range(200)]
    decision = Framework(default_plugins(), 5, 20).schedule_one(run(), snapshot(pods))
    assert decision.pod is None
    assert decision.message == "0/200 pods: 200 at capacity"


def test_full_pods_are_walked_last():
    counting = CountingFilter()
    full = [pod(f"a{i:03d}", runs=2, used=2) for i in range(100)]
    # capacities that differ: Score ranks the whole sample (see the shortcut below)
    free = [pod(f"z{i:03d}", runs=2 + i % 2, used=0) for i in range(100)]
    Framework([counting, *default_plugins()], 5, 10).schedule_one(run(), snapshot(full + free))
    assert counting.asked == [f"z{i:03d}" for i in range(10)]


def test_assume_moves_the_pod_in_the_order():
    pods = [pod("a", runs=2), pod("b", runs=2)]
    snap = snapshot(pods)
    the_run = run()
    assert [p.name for p in snap.candidates(the_run)] == ["a", "b"]
    snap.assume(the_run, pods[0])
    assert [p.name for p in snap.candidates(the_run)] == ["b", "a"]
    snap.forget(the_run, pods[0])
    assert [p.name for p in snap.candidates(the_run)] == ["a", "b"]
    snap.exclude(pods[0])
    assert [p.name for p in snap.candidates(the_run)] == ["b", "a"]


pools = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 4), st.booleans(), st.sampled_from(["x", "y"])),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(pools, st.integers(0, 100), st.sampled_from(["x", "y", None]))
def test_the_sampled_scorer_picks_the_pod_the_full_one_picks_on_small_pools(
    shape, percentage, prefers
):
    def build():
        pods, placements = [], []
        for i, (capacity, used, ready, label) in enumerate(shape):
            pods.append(pod(f"p{i:02d}", runs=capacity, used=min(used, capacity), ready=ready))
            placements.append(placed(f"p{i:02d}", {"app": label}))
        return snapshot(pods, *placements)

    affinity = preferred("runAffinity", (10, {"app": prefers})) if prefers else None
    full = Framework(default_plugins()).schedule_one(run(affinity=affinity), build())
    sampled = Framework(default_plugins(), percentage, min_pods_to_score=12).schedule_one(
        run(affinity=affinity), build()
    )
    assert (full.pod and full.pod.name) == (sampled.pod and sampled.pod.name)
    assert full.message == sampled.message


# pods of up to three resources, some of them full or missing one
resource_pools = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from(["runs", "cpu", "gpu"]), st.integers(0, 6), min_size=1),
        st.dictionaries(st.sampled_from(["runs", "cpu", "gpu"]), st.integers(0, 6)),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    resource_pools,
    st.dictionaries(st.sampled_from(["runs", "cpu", "gpu"]), st.integers(0, 3), min_size=1),
)
def test_one_scorer_picks_the_pod_its_normalised_total_picks(shape, requests):
    """With LeastLoaded alone, the lowest raw load (ties to the smallest name) is the pod the
    normalised totals pick, on pools larger than rank_scores's 101 distinct scores or not."""
    pods = [pod(f"p{i:02d}", capacity=capacity, used=0) for i, (capacity, _) in enumerate(shape)]
    for state, (_, used) in zip(pods, shape, strict=True):
        state.used = dict(used)
    framework = Framework(default_plugins())
    the_run = run(requests=requests)
    snap = snapshot(pods)
    decision = framework.schedule_one(the_run, snap)
    availability = framework.filters[1]
    feasible = [p for p in pods if availability.filter(the_run, p, snap, {}) is None]
    assert (decision.pod is None) == (not feasible)
    if feasible:
        totals = framework.totals(the_run, feasible, snap, {})
        expected = min(feasible, key=lambda candidate: (-totals[candidate.name], candidate.name))
        assert decision.pod.name == expected.name


def test_many_equal_scores_still_go_to_the_least_loaded_pod():
    """Past 101 pods rank_scores gives neighbouring ranks one score; only the least loaded
    group scores 100, so the shortcut and the totals agree there too."""
    pods = [pod(f"p{i:03d}", runs=1000, used=i) for i in range(150, 0, -1)]
    framework = Framework(default_plugins())
    snap = snapshot(pods)
    totals = framework.totals(run(), pods, snap, {})
    assert sorted(totals.values())[-2:] == [99, 100]
    assert framework.schedule_one(run(), snap).pod.name == "p001"


class EveryPodScored(LeastLoaded):
    """LeastLoaded without the shortcut: Filter finds a whole sample and Score ranks it."""

    def walks_best_first(self, run, snapshot):
        return False


def test_on_pods_of_one_capacity_filter_stops_at_the_first_feasible_pod():
    counting = CountingFilter()
    pods = [pod(f"p{i:03d}", runs=4, used=i % 4, ready=i != 3) for i in range(200)]
    decision = Framework([counting, *default_plugins()], 5, 20).schedule_one(run(), snapshot(pods))
    assert decision.pod.name == "p000" and counting.asked == ["p000"]
    with_gpus = [pod("a", capacity={"runs": 4, "gpu": 1}), pod("b", capacity={"runs": 4})]
    counting.asked.clear()
    Framework([counting, *default_plugins()]).schedule_one(run(), snapshot(with_gpus))
    assert counting.asked == ["a", "b"]  # capacities differ: every pod is scored


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5), st.integers(0, 2), st.booleans(), st.sampled_from([1.0, 30.0])
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 5),
    st.booleans(),
    st.sampled_from([{"runs": 1}, {"runs": 2}, {"runs": 1, "cpu": 1}, {"cpu": 1}, {"runs": 0}]),
    st.sampled_from([None, "x"]),
)
# the least loaded pod by cpu is not the least loaded by runs, which is all the Run asks for
@example([(0, 2, True, 1.0), (1, 0, True, 1.0)], 5, True, {"runs": 1}, None)
def test_the_shortcut_picks_the_pod_scoring_every_feasible_pod_picks(
    shape, capacity, with_cpu, requests, prefers
):
    """Pods of one capacity (``runs``, and ``cpu`` too when ``with_cpu``: then their order by
    load is not the Run's order by projected load, and the shortcut must not be taken)."""

    def decide(scorer):
        pods = []
        for i, (used, cpu, ready, age) in enumerate(shape):
            state = pod(
                f"p{i:02d}",
                capacity={"runs": capacity, **({"cpu": 2} if with_cpu else {})},
                ready=ready,
                heartbeat_age=age,
            )
            state.used = {"runs": min(used, capacity), **({"cpu": cpu} if with_cpu else {})}
            pods.append(state)
        affinity = preferred("runAffinity", (10, {"app": prefers})) if prefers else None
        plugins = [p for p in default_plugins() if not isinstance(p, LeastLoaded)]
        snap = snapshot(pods, placed("p00", {"app": "x"}))
        return Framework([*plugins, scorer]).schedule_one(
            run(requests=requests, affinity=affinity), snap
        )

    short, full = decide(LeastLoaded()), decide(EveryPodScored())
    assert (short.pod and short.pod.name) == (full.pod and full.pod.name)
    assert short.message == full.message
