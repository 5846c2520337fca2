"""Retain means retain, for real (issue 27, item 8): on ``manage.py up`` with the local
provider, PostgreSQL (the configured test database) and Redis, a file written in a ``Retain``
workspace survives the deletion of its Runtime: the Runtime waits behind
``kruntimes.io/retained-workspaces`` with the ``RetainedWorkspaces`` condition and its pod keeps
running (while another Runtime deleted alongside is drained at once), until the workspace is
deleted; then the workspace's directory, the Runtime and its pod go."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.live import API, RUNTIME, phase, script_run
from tests.helpers.services import require_redis
from tests.helpers.waiting import wait_until
from tests.integration.conftest import redis_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker(tmp_path) -> dict[str, str]:
    """Redis, as a deployment runs it."""
    url = redis_url()
    require_redis(url)
    import redis

    redis.Redis.from_url(url).delete("control")
    return {"CELERY_BROKER_URL": url, "KRUNTIMES_DATA_DIR": str(tmp_path / "data")}


def runtime(name: str) -> dict:
    return {**RUNTIME, "metadata": {"name": name}, "spec": {**RUNTIME["spec"], "replicas": 1}}


def workspace(name: str, **spec) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "PersistentWorkspace",
        "metadata": {"name": name},
        "spec": {"runtime": "bash", **spec},
    }


def get(session, base, path: str):
    return session.get(f"{base}{API}/{path}", timeout=5)


def retained_condition(session, base) -> dict:
    conditions = get(session, base, "runtimes/bash").json().get("status", {}).get("conditions")
    return next((c for c in conditions or [] if c["type"] == "RetainedWorkspaces"), {})


def pods(runtime_name: str) -> list:
    from scheduling.models import RuntimePod

    return list(RuntimePod.objects.filter(runtime=runtime_name, phase="Running"))


def alive(pid: int | None) -> bool:
    try:
        os.kill(pid or 0, 0)
    except OSError:
        return False
    return bool(pid)


def test_a_retain_workspace_keeps_its_data_across_runtime_deletion(portal_up):
    session, base = portal_up
    for name in ("bash", "other"):
        created = session.post(f"{base}{API}/runtimes", json=runtime(name), timeout=10)
        assert created.status_code == 201, created.text
    assert wait_until(lambda: len(pods("bash")) == 1 and len(pods("other")) == 1, timeout=60)
    for body in (workspace("keep", cleanupPolicy="Retain"), workspace("scratch")):
        created = session.post(f"{base}{API}/persistentworkspaces", json=body, timeout=10)
        assert created.status_code == 201, created.text
    run = script_run("write", 'echo "precious" > data.txt')
    run["spec"]["workspace"] = {"name": "keep"}
    assert session.post(f"{base}{API}/runs", json=run, timeout=10).status_code == 201
    assert wait_until(lambda: phase(session, base, "write") == "Succeeded", timeout=60)
    (pod,) = pods("bash")
    data = Path(pod.workspace_path) / "persistent" / "keep" / "data.txt"
    assert data.read_text() == "precious\n"
    assert wait_until(
        lambda: (
            "kruntimes.io/retained-workspaces"
            in get(session, base, "runtimes/bash").json()["metadata"].get("finalizers", [])
        ),
        timeout=30,
    )

    for name in ("bash", "other"):
        deleted = session.delete(f"{base}{API}/runtimes/{name}", timeout=10)
        assert deleted.status_code in (200, 202), deleted.text
    # the provider has acted on the deletions: the other Runtime's pod is gone ...
    assert wait_until(lambda: not pods("other"), timeout=60), "the other pod never drained"
    assert wait_until(
        lambda: retained_condition(session, base).get("reason") == "WaitingForRetainedWorkspaces",
        timeout=30,
    ), retained_condition(session, base)
    held = get(session, base, "runtimes/bash").json()
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["kruntimes.io/retained-workspaces"]
    message = retained_condition(session, base)["message"]
    assert "keep" in message and "scratch" not in message
    # ... while this one's pod, the workspace and its data stay
    assert [p.uid for p in pods("bash")] == [pod.uid] and alive(pod.pid)
    assert get(session, base, "persistentworkspaces/keep").json()["status"]["phase"] == "Bound"
    assert data.read_text() == "precious\n"
    print(f"retained: {data} kept; Runtime condition {retained_condition(session, base)}")

    assert session.delete(f"{base}{API}/persistentworkspaces/keep", timeout=10).status_code in (
        200,
        202,
    )
    assert wait_until(
        lambda: get(session, base, "persistentworkspaces/keep").status_code == 404, timeout=60
    )
    assert not data.exists()  # the explicit deletion removed it, on the kept pod
    assert wait_until(lambda: get(session, base, "runtimes/bash").status_code == 404, timeout=60)
    assert wait_until(lambda: not pods("bash"), timeout=60)
