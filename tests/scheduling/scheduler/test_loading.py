"""Reading the snapshot from the configured database (run on SQLite and on PostgreSQL): usage
summed in SQL, placed Runs grouped, selectors answered in SQL exactly as ``Selector.matches``."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings

from portal.machinery.labels import EQUALS, Requirement, Selector
from scheduling import run_status
from scheduling.models import Run, RuntimePod
from scheduling.scheduler import bind as binding
from scheduling.scheduler.loading import DatabasePlacements, pending_runs, take_snapshot
from tests.helpers.examples import examples
from tests.helpers.records import make_pod, make_run, make_runtime
from tests.helpers.strategies import KEYS, VALUES, selectors

pytestmark = pytest.mark.django_db


def placed_run(
    name: str,
    pod: RuntimePod,
    *,
    labels: dict | None = None,
    requests: dict | None = None,
    phase: str = "Running",
    namespace: str = "default",
    pod_uid: str = "",
) -> Run:
    """A Run already bound to ``pod`` (or to another incarnation of it, by ``pod_uid``)."""
    status = run_status.scheduled({}, pod.name, pod_uid or str(pod.uid), timezone.now(), 1)
    status["phase"] = phase
    run = Run(
        namespace=namespace,
        name=name,
        labels=labels or {},
        status=status,
        spec={"runtime": pod.runtime, "resources": {"requests": requests or {"runs": 1}}},
    )
    run.sync_columns()
    run.save()
    return run


@pytest.fixture
def cluster():
    """Active Runs with labels over a small alphabet on three pods, plus Runs that never count:
    pending, finished, and in another namespace."""
    pods = [make_pod(f"bash-{i}", runs=100) for i in range(3)]
    other = RuntimePod.objects.create(
        namespace="other",
        runtime="bash",
        name="bash-0",
        uid=uuid.uuid4(),
        ready=True,
        phase="Running",
    )
    expected = []
    for i in range(40):
        j = i // 2  # Runs come in pairs with the same pod and labels
        labels = {key: VALUES[(j + k * j // 3) % 3] for k, key in enumerate(KEYS) if (j + k) % 4}
        pod = pods[j % 3]
        placed_run(f"a{i}", pod, labels=labels, phase=("Scheduled", "Running", "Ready")[i % 3])
        expected.append((pod.name, labels))
    placed_run("done", pods[0], labels={"app": "a"}, phase="Succeeded")
    placed_run("elsewhere", other, labels={"app": "a"}, namespace="other")
    make_run("waiting", labels={"app": "a"})
    return expected


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(selector=selectors)
def test_selectors_in_sql_match_like_the_selector(cluster, selector):
    found = DatabasePlacements(sql_selectors=1).targets("default", selector)
    assert dict(found) == dict(Counter(pod for pod, labels in cluster if selector.matches(labels)))


def test_placed_runs_are_grouped_by_pod_and_labels(cluster):
    placed = DatabasePlacements(sql_selectors=0).placed("default")
    assert sum(p.count for p in placed) == len(cluster)
    assert len(placed) < len(cluster)  # identical (pod, labels) share a row
    assert Counter(
        {(p.pod_name, tuple(sorted(p.labels.items()))): p.count for p in placed}
    ) == Counter((pod, tuple(sorted(labels.items()))) for pod, labels in cluster)


def test_pod_usage_is_summed_per_pod_and_incarnation():
    make_runtime()
    a, b = make_pod("bash-a", runs=10, memory=8 * 1024**3), make_pod("bash-b", runs=10)
    elsewhere = RuntimePod.objects.create(
        namespace="other",
        runtime="bash",
        name="bash-a",
        uid=uuid.uuid4(),
        ready=True,
        phase="Running",
    )
    for i in range(3):
        placed_run(f"big{i}", a, requests={"runs": 2, "memory": "1Gi"})
    placed_run("small", a, phase="Scheduled")
    placed_run("old", a, pod_uid=str(uuid.uuid4()))  # bound to a previous incarnation
    placed_run("done", a, phase="Failed")
    placed_run("b", b)
    placed_run("same-name", elsewhere, namespace="other")
    pods = take_snapshot(timezone.now()).pods_by_key
    assert pods["default", "bash-a"].used == {"runs": 7, "memory": 3 * 1024**3}
    assert pods["default", "bash-b"].used == {"runs": 1}
    assert pods["other", "bash-a"].used == {"runs": 1}


@pytest.mark.parametrize("sql_selectors", [0, 1], ids=["read-namespace", "count-in-sql"])
def test_a_bound_assumption_is_counted_once(sql_selectors):
    make_runtime()
    make_pod("bash-a")
    make_pod("bash-b")
    build = {"job": "build"}
    make_run("seed", labels=build)
    now = timezone.now()
    snapshot = take_snapshot(now, sql_selectors)
    seed, pod = pending_runs(10)[0], snapshot.pods_by_key["default", "bash-a"]
    snapshot.assume(seed, pod)
    assert [r.name for r, _ in binding.bind([(seed, pod)], now).bound] == ["seed"]
    snapshot.finish_binding(seed)
    # the namespace is first read now: the database has the seed, the assumption must not add it
    selector = Selector((Requirement("job", EQUALS, frozenset({"build"})),))
    assert snapshot.targets("default", selector) == {"bash-a": 1}
