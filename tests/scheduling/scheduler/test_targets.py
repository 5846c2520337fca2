"""Affinity targets through the inverted label index, against a brute-force count.

Random placed Runs, selectors and sequences of Assume / Forget / bind / query, on a hand-built
snapshot and on a lazily read one (a fake source standing in for the database).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from portal.machinery.labels import EQUALS, Requirement, Selector
from scheduling.scheduler.snapshot import PlacedRun, Snapshot
from tests.helpers.examples import examples
from tests.helpers.snapshots import NOW, pod, run
from tests.helpers.strategies import labels, selectors

NAMESPACES = ["default", "other"]
PODS = ["p0", "p1", "p2"]
actual_runs = st.tuples(
    st.sampled_from(NAMESPACES), st.sampled_from(PODS), labels, st.integers(1, 3)
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("assume"), st.sampled_from(NAMESPACES), st.sampled_from(PODS), labels),
        st.tuples(st.just("forget"), st.integers(0, 50)),
        st.tuples(st.just("bind"), st.integers(0, 50)),
        st.tuples(st.just("query"), st.sampled_from(NAMESPACES), st.integers(0, 3)),
    ),
    max_size=40,
)


class FakeDatabase:
    """A ``PlacedSource``: actual Runs as (namespace, pod, labels, count), and a SQL budget."""

    def __init__(self, actual: list[tuple], sql_selectors: int) -> None:
        self.actual = list(actual)
        self.sql_selectors = sql_selectors

    def placed(self, namespace):
        return [
            PlacedRun("", dict(run_labels), pod_name, count=count)
            for ns, pod_name, run_labels, count in self.actual
            if ns == namespace
        ]

    def targets(self, namespace, selector):
        if self.sql_selectors <= 0:
            return None
        self.sql_selectors -= 1
        return brute_force(self.actual, namespace, selector)


def brute_force(placed: list[tuple], namespace: str, selector: Selector) -> Counter:
    found: Counter = Counter()
    for ns, pod_name, run_labels, count in placed:
        if ns == namespace and selector.matches(run_labels):
            found[pod_name] += count
    return found


def check(
    snapshot: Snapshot,
    database: FakeDatabase | None,
    actual: list[tuple],
    pool: list[Selector],
    ops: list[tuple],
    watch_all: bool,
) -> None:
    queries = [
        ("query", namespace, index) for namespace in NAMESPACES for index in range(len(pool))
    ]
    ops = (queries if watch_all else []) + ops + queries  # every counter, checked last
    assumed: dict[str, tuple] = {}  # uid -> (PendingRun, pod, bound?)
    for number, op in enumerate(ops):
        if op[0] == "assume":
            _, namespace, pod_name, run_labels = op
            the_run = run(f"r{number}", labels=run_labels, namespace=namespace)
            the_pod = pod(pod_name, namespace=namespace)
            snapshot.assume(the_run, the_pod)
            assumed[the_run.uid] = (the_run, the_pod, False)
        elif op[0] in ("forget", "bind") and assumed:
            uid = sorted(assumed)[op[1] % len(assumed)]
            the_run, the_pod, bound = assumed[uid]
            if bound:
                continue  # the cycle never releases a bound Run
            if op[0] == "forget":
                snapshot.forget(the_run, the_pod)
                del assumed[uid]
            else:
                snapshot.finish_binding(the_run)
                assumed[uid] = (the_run, the_pod, True)
                if database is not None:
                    database.actual.append((the_run.namespace, the_pod.name, the_run.labels, 1))
        elif op[0] == "query":
            _, namespace, index = op
            selector = pool[index % len(pool)]
            expected = brute_force(
                actual + [(r.namespace, p.name, r.labels, 1) for r, p, _ in assumed.values()],
                namespace,
                selector,
            )
            # dicts, not Counters: a left-over zero would make "no target" look like one
            assert dict(snapshot.targets(namespace, selector)) == dict(expected)


@settings(max_examples=examples(300))
@given(
    st.lists(actual_runs, max_size=12),
    st.lists(selectors, min_size=1, max_size=4),
    operations,
    st.booleans(),
)
def test_hand_built_snapshot_counts_like_a_brute_force_scan(actual, pool, ops, watch_all):
    placed: dict[str, list[PlacedRun]] = {}
    for namespace, pod_name, run_labels, count in actual:
        placed.setdefault(namespace, []).append(PlacedRun("", run_labels, pod_name, count=count))
    check(Snapshot(NOW, [], placed), None, actual, pool, ops, watch_all)


@settings(max_examples=examples(300))
@given(
    st.lists(actual_runs, max_size=12),
    st.lists(selectors, min_size=1, max_size=4),
    operations,
    st.booleans(),
    st.integers(0, 3),
)
def test_lazily_read_snapshot_counts_like_a_brute_force_scan(
    actual, pool, ops, watch_all, sql_selectors
):
    database = FakeDatabase(actual, sql_selectors)
    check(Snapshot(NOW, [], {}, source=database), database, actual, pool, ops, watch_all)


def test_a_namespace_is_read_once_and_only_when_asked():
    reads = []

    class Source(FakeDatabase):
        def placed(self, namespace):
            reads.append(namespace)
            return super().placed(namespace)

    snap = Snapshot(NOW, [], {}, source=Source([("default", "p0", {"app": "a"}, 2)], 0))
    selector = Selector((Requirement("app", EQUALS, frozenset({"a"})),))
    assert snap.targets("default", selector) == {"p0": 2}
    assert snap.targets("default", Selector()) == {"p0": 2}
    assert reads == ["default"]
