"""Framework extension points: PreScore lets a scorer sit out a Run; Filter asks only the
plugins that filter; affinity targets are resolved once per Run."""

from __future__ import annotations

from scheduling.scheduler.framework import Framework, Plugin
from scheduling.scheduler.plugins import PreferredRunAffinity, RunAffinity, default_plugins
from scheduling.scheduler.snapshot import Snapshot
from tests.helpers.snapshots import NOW, placed, pod, preferred, required, run, snapshot

BUILD = {"job": "build"}


class Recording(Plugin):
    scores = True

    def __init__(self, name: str, has_a_say: bool, prefers: str = "") -> None:
        self.name, self.has_a_say, self.prefers, self.scored = name, has_a_say, prefers, []

    def pre_score(self, run, snapshot, state):
        return self.has_a_say

    def score(self, run, pod, snapshot, state):
        self.scored.append(pod.name)
        return 100.0 if pod.name == self.prefers else 0.0


def test_a_scorer_with_nothing_to_say_is_not_asked():
    quiet, loud = Recording("Quiet", False, prefers="c"), Recording("Loud", True, prefers="b")
    decision = Framework([quiet, loud]).schedule_one(
        run(), snapshot([pod("a"), pod("b"), pod("c")])
    )
    assert decision.pod.name == "b"
    assert quiet.scored == [] and loud.scored == ["a", "b", "c"]


def test_plugins_score_by_default():
    assert Plugin().pre_score(run(), snapshot([]), {}) is True


def test_preferred_affinity_has_a_say_only_when_some_pod_has_a_target():
    plugin, the_run = PreferredRunAffinity(), run(affinity=preferred("runAffinity", (10, BUILD)))
    assert not plugin.pre_score(the_run, snapshot([pod("a")]), {})
    assert plugin.pre_score(the_run, snapshot([pod("a")], placed("a", BUILD)), {})
    assert not plugin.pre_score(run(), snapshot([pod("a")], placed("a", BUILD)), {})


def test_only_filtering_plugins_are_asked_per_pod():
    framework = Framework(default_plugins())
    assert [p.name for p in framework.filters] == [
        "WorkspaceFencing",
        "RuntimePodAvailability",
        "RunAffinity",
    ]


class Skipping(Plugin):
    """A Filter that rejects every pod, unless its PreFilter step says it has nothing to check."""

    name = "Skipping"

    def __init__(self, checks: bool) -> None:
        self.checks, self.asked = checks, []

    def filters(self, run, state):
        return self.checks

    def filter(self, run, pod, snapshot, state):
        self.asked.append(pod.name)
        return "NotReady"


def test_a_filter_with_nothing_to_check_for_the_run_is_skipped_for_every_pod():
    pods = [pod("a"), pod("b")]
    skipped = Skipping(checks=False)
    decision = Framework([skipped, *default_plugins()]).schedule_one(run(), snapshot(pods))
    assert decision.pod.name == "a" and skipped.asked == []
    asked = Skipping(checks=True)
    decision = Framework([asked, *default_plugins()]).schedule_one(run(), snapshot(pods))
    assert decision.pod is None and asked.asked == ["a", "b"]
    assert decision.message == "0/2 pods: 2 are not ready"


def test_fencing_and_required_affinity_filter_only_runs_that_have_them():
    fencing, affinity = default_plugins()[0], RunAffinity()
    assert not fencing.filters(run(), {})
    assert fencing.filters(run(workspace="ws"), {"workspace": object()})
    snap = snapshot([pod("a")], placed("a", BUILD))
    for the_run, checks in [
        (run(), False),
        (run(affinity=preferred("runAffinity", (10, BUILD))), False),
        (run(affinity=required("runAffinity", BUILD)), True),
        (run(affinity=required("runAntiAffinity", BUILD)), True),
    ]:
        state: dict = {}
        affinity.pre_filter(the_run, snap, state)
        assert affinity.filters(the_run, state) is checks


def test_required_targets_are_resolved_once_per_run():
    asked = []

    class Counting(Snapshot):
        def targets(self, namespace, selector):
            asked.append(selector)
            return super().targets(namespace, selector)

    snap = Counting(NOW, [pod(name) for name in "abcd"], {})
    the_run = run(labels=BUILD, affinity=required("runAffinity", BUILD))
    assert Framework([RunAffinity()]).schedule_one(the_run, snap).pod.name == "a"
    assert len(asked) == 1
