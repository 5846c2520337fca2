"""PreFilterResult: a required runAffinity term, or a workspace, names the only pods that can
pass, and Filter walks just those. The pod chosen and the Pending message are the ones a
walk of every pod gives, on any pool."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduling.scheduler.framework import Framework
from scheduling.scheduler.plugins import default_plugins
from scheduling.scheduler.snapshot import WorkspaceState
from tests.helpers.examples import examples
from tests.helpers.snapshots import placed, pod, required, run, snapshot


class CountingAvailability(type(default_plugins()[1])):  # type: ignore[misc]
    def __init__(self) -> None:
        self.asked: list[str] = []

    def filter(self, run, pod, snapshot, state):
        self.asked.append(pod.name)
        return super().filter(run, pod, snapshot, state)


def every_pod_walked() -> list:
    """The default plugins with no PreFilterResult: Filter walks every candidate."""
    plugins = []
    for plugin in default_plugins():
        walk_all = type(plugin.name, (type(plugin),), {"pre_filter_pods": lambda *_: None})
        plugins.append(walk_all())
    return plugins


def test_a_follower_is_walked_to_its_cohorts_pod_only():
    counting = CountingAvailability()
    plugins = [p if p.name != counting.name else counting for p in default_plugins()]
    pods = [pod(f"p{i:03d}", runs=4) for i in range(300)]
    snap = snapshot(pods, placed("p250", {"cohort": "c1"}))
    the_run = run(labels={"cohort": "c1"}, affinity=required("runAffinity", {"cohort": "c1"}))
    decision = Framework(plugins).schedule_one(the_run, snap)
    assert decision.pod.name == "p250" and counting.asked == ["p250"]


def test_when_no_pod_fits_the_message_counts_every_pod():
    pods = [pod("a", used=2), pod("b", ready=False), pod("c")]
    snap = snapshot(pods, placed("a", {"cohort": "c1"}))
    the_run = run(affinity=required("runAffinity", {"cohort": "c1"}))
    decision = Framework(default_plugins()).schedule_one(the_run, snap)
    assert decision.pod is None
    assert (
        decision.message == "0/3 pods: 1 does not match runAffinity, 1 at capacity, 1 is not ready"
    )


LABELS = st.sampled_from([{"cohort": "c1"}, {"cohort": "c2"}, {"spread": "s1"}])
pools = st.lists(
    st.tuples(st.integers(1, 3), st.integers(0, 3), st.booleans(), st.lists(LABELS, max_size=2)),
    min_size=0,
    max_size=10,
)
affinities = st.sampled_from(
    [
        None,
        required("runAffinity", {"cohort": "c1"}),
        required("runAffinity", {"cohort": "c1"}, {"spread": "s1"}),
        required("runAffinity", {"cohort": "c2"}),
        required("runAntiAffinity", {"spread": "s1"}),
        {
            **required("runAffinity", {"cohort": "c1"}),
            **required("runAntiAffinity", {"spread": "s1"}),
        },
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(
    pools,
    affinities,
    st.sampled_from([{}, {"cohort": "c1"}, {"cohort": "c2"}]),
    st.sampled_from([None, 0, 3]),
    st.integers(1, 100),
)
# the least loaded of two target pods, one of which has two targets
@example(
    [(3, 0, True, [{"cohort": "c1"}]), (3, 2, True, [{"cohort": "c1"}, {"cohort": "c1"}])],
    required("runAffinity", {"cohort": "c1"}),
    {},
    None,
    100,
)
def test_the_narrowed_walk_decides_as_the_walk_of_every_pod(
    shape, affinity, labels, workspace_pod, percentage
):
    def decide(plugins):
        pods, placements = [], []
        for i, (capacity, used, ready, placed_labels) in enumerate(shape):
            pods.append(pod(f"p{i:02d}", runs=capacity, used=min(used, capacity), ready=ready))
            placements += [
                placed(f"p{i:02d}", one, uid=f"x{i}-{j}") for j, one in enumerate(placed_labels)
            ]
        workspaces = {}
        if workspace_pod is not None:
            workspaces[("default", "ws")] = WorkspaceState(
                "bash", "Bound", f"p{workspace_pod:02d}", f"uid-p{workspace_pod:02d}"
            )
        snap = snapshot(pods, *placements, workspaces=workspaces)
        the_run = run(
            labels=labels, affinity=affinity, workspace="ws" if workspace_pod is not None else ""
        )
        return Framework(plugins, percentage, min_pods_to_score=3).schedule_one(the_run, snap)

    narrowed, full = decide(default_plugins()), decide(every_pod_walked())
    assert (narrowed.pod and narrowed.pod.name) == (full.pod and full.pod.name)
    assert narrowed.message == full.message
