"""Filter stops after enough feasible pods and Score ranks that sample; candidates are walked
least loaded first. On pools no larger than the minimum the sampled framework decides exactly
as the full one does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduling.scheduler.framework import Framework, Plugin, pods_to_find
from scheduling.scheduler.plugins import default_plugins
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
    free = [pod(f"z{i:03d}", runs=2, used=0) for i in range(100)]
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
