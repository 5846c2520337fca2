"""A graceful restart of ``manage.py up`` in the middle of three WorkflowRuns, on Redis (and the
configured database): the local Runtime Pods come back with their names, UIDs and disks, so
each job workspace stays Bound and every WorkflowRun finishes, no step run twice.

Each step appends to a ledger when it starts and when it is done (outside the pods, so it
survives anything) and a line to a file in its job's workspace; the last step reports how many
lines that file holds.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.helpers.live import API, RUNTIME, ready_pods
from tests.helpers.services import require_redis
from tests.helpers.waiting import wait_until

from .conftest import api_session, redis_url, up_process

pytestmark = pytest.mark.django_db(transaction=True)
WORKFLOW_RUNS = 3
STEPS = 4
TERMINAL = {"Succeeded", "Failed", "Cancelled"}


@pytest.fixture
def broker(tmp_path) -> dict[str, str]:
    """Redis only: the broker the issue's restart was seen on."""
    url = redis_url()
    require_redis(url)
    import redis

    redis.Redis.from_url(url).flushdb()  # no queue left by an earlier run
    data = tmp_path / "data"
    data.mkdir()
    return {"CELERY_BROKER_URL": url, "KRUNTIMES_DATA_DIR": str(data)}


def step(ledger, index: int) -> dict:
    script = (
        f'echo "$KRUNTIME_RUN_NAME $KRUNTIME_ATTEMPT start" >> {ledger}\n'
        "sleep 1.5\n"
        f'echo "step {index}" >> steps.txt\n'
        f'echo "$KRUNTIME_RUN_NAME $KRUNTIME_ATTEMPT done" >> {ledger}\n'
    )
    if index == STEPS - 1:
        script += 'echo "lines=$(wc -l < steps.txt)" >> "$KRUNTIME_OUTPUTS"\n'
    return {"name": f"s{index}", "run": script}


def workflow_run(name: str, ledger) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "WorkflowRun",
        "metadata": {"name": name},
        "spec": {
            "jobs": {
                "build": {"runs-on": "bash", "steps": [step(ledger, i) for i in range(STEPS)]}
            },
            "inputs": {},
        },
    }


def ledger_lines(ledger) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


def done(ledger) -> int:
    return sum(1 for line in ledger_lines(ledger) if line.endswith(" done"))


def statuses(session, base) -> dict[str, dict]:
    return {
        f"w{i}": session.get(f"{base}{API}/workflowruns/w{i}", timeout=5).json().get("status", {})
        for i in range(WORKFLOW_RUNS)
    }


def pods() -> dict[str, str]:
    from scheduling.models import RuntimePod

    return {pod.name: str(pod.uid) for pod in RuntimePod.objects.all()}


@pytest.fixture
def namespace():
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})


def test_a_graceful_restart_of_up_keeps_every_workflow_run(broker, tmp_path, admin_user, namespace):
    from workspaces.models import PersistentWorkspace

    ledger = tmp_path / "ledger"
    session = api_session(admin_user)
    # the real drain: a step (1.5 s) finishes within the pods' grace
    up = up_process(broker, tmp_path, {"KRUNTIMES_POD_TERMINATION_GRACE_SECONDS": "15"})
    total = WORKFLOW_RUNS * STEPS
    try:
        up.start(session)
        assert session.post(f"{base(up)}/runtimes", json=RUNTIME, timeout=10).status_code == 201
        for i in range(WORKFLOW_RUNS):
            created = session.post(
                f"{base(up)}/workflowruns", json=workflow_run(f"w{i}", ledger), timeout=10
            )
            assert created.status_code == 201, created.text
        assert wait_until(lambda: done(ledger) >= WORKFLOW_RUNS, timeout=60), ledger_lines(ledger)
        before = pods()
        bound = dict(PersistentWorkspace.objects.values_list("name", "bound_pod_uid"))
        stopped_in = up.stop(timeout=60)
        at_stop = done(ledger)
        assert at_stop < total, "every step was done before the stop: no restart in the middle"
        up.start(session)
        assert wait_until(lambda: ready_pods() == 2, timeout=30), "the pods never came back"
        kept = dict(PersistentWorkspace.objects.values_list("name", "bound_pod_uid"))
        lost = PersistentWorkspace.objects.filter(phase="Lost").count()
        assert wait_until(
            lambda: all(s.get("phase") in TERMINAL for s in statuses(session, up.base).values()),
            timeout=60,
        ), statuses(session, up.base)
        final = statuses(session, up.base)
        after = pods()
    finally:
        up.stop()
        print(up.log_path.read_text(errors="replace")[-4000:])
    starts = Counter(line.rsplit(" ", 2)[0] for line in ledger_lines(ledger) if "start" in line)
    twice = sum(1 for count in starts.values() if count > 1)
    succeeded = sum(1 for s in final.values() if s.get("phase") == "Succeeded")
    print(
        f"{succeeded} of {WORKFLOW_RUNS} WorkflowRuns Succeeded, {twice} steps run twice; "
        f"{at_stop} of {total} steps done at the stop (stopped in {stopped_in:.1f}s)"
    )
    assert succeeded == WORKFLOW_RUNS, final
    assert twice == 0 and len(starts) == total, starts
    # the pods came back as themselves: the job workspaces stayed Bound to them
    assert after == before and lost == 0
    assert bound and all(kept.get(name, uid) == uid for name, uid in bound.items()), (bound, kept)
    for status in final.values():
        last = status["jobs"]["build"]["steps"][-1]
        assert last["outputs"] == {"lines": str(STEPS)}  # each step's line, once, in one place


def base(up) -> str:
    return f"{up.base}{API}"
