"""PersistentWorkspaces for real, on ``manage.py up`` (the embedded default): two Runs share a
workspace on its bound pod; the TTL removes the directory from the pod's disk, then the object;
killing the bound pod turns the workspace Lost and the next Run stays Pending with a message."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.helpers.live import API, RUNTIME, phase, ready_pods, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker(tmp_path) -> dict[str, str]:
    """The embedded default only: this is about workspaces, not brokers."""
    data = tmp_path / "data"
    data.mkdir()
    return {"CELERY_BROKER_URL": "filesystem://localhost/", "KRUNTIMES_DATA_DIR": str(data)}


def workspace(name: str, **spec) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "PersistentWorkspace",
        "metadata": {"name": name},
        "spec": {"runtime": "bash", **spec},
    }


def in_workspace(name: str, script: str, ws: str) -> dict:
    run = script_run(name, script)
    run["spec"]["workspace"] = {"name": ws}
    return run


def get(session, base, path: str):
    return session.get(f"{base}{API}/{path}", timeout=5)


def ws_status(session, base, name: str) -> dict:
    return get(session, base, f"persistentworkspaces/{name}").json().get("status", {})


def pod_disk(pod_name: str) -> Path:
    from scheduling.models import RuntimePod

    return Path(RuntimePod.objects.get(name=pod_name).workspace_path)


def test_workspaces_share_files_expire_and_are_lost_with_their_pod(portal_up):
    from scheduling.models import RuntimePod

    session, base = portal_up
    assert session.post(f"{base}{API}/runtimes", json=RUNTIME, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=60), "Runtime Pods never got ready"
    for body in (workspace("shared"), workspace("short", ttlSecondsAfterUnused=1)):
        created = session.post(f"{base}{API}/persistentworkspaces", json=body, timeout=10)
        assert created.status_code == 201, created.text
    # "short" is used at once: a bound workspace nobody uses would expire 1 s after binding
    touch = in_workspace(
        "touch", 'echo x > mine.txt; echo "cwd=$PWD" >> "$KRUNTIME_OUTPUTS"', "short"
    )
    assert session.post(f"{base}{API}/runs", json=touch, timeout=10).status_code == 201
    assert wait_until(lambda: ws_status(session, base, "shared").get("phase") == "Bound", 30)
    bound = ws_status(session, base, "shared")
    assert bound["path"] == "/workspace/persistent/shared"

    # two Runs in one workspace: the second sees what the first wrote, on the same pod
    runs = [
        in_workspace("write", "echo hello > shared.txt", "shared"),
        in_workspace("read", 'test "$(cat shared.txt)" = hello', "shared"),
    ]
    for run in runs:
        assert session.post(f"{base}{API}/runs", json=run, timeout=10).status_code == 201
        name = run["metadata"]["name"]
        assert wait_until(lambda n=name: phase(session, base, n) == "Succeeded", timeout=60), name
        status = get(session, base, f"runs/{name}").json()["status"]
        assert (status["assignedPod"], status["assignedPodUID"]) == (
            bound["boundPod"],
            bound["boundPodUID"],
        )
    shared_dir = pod_disk(bound["boundPod"]) / "persistent" / "shared"
    assert (shared_dir / "shared.txt").read_text() == "hello\n"

    # the TTL path: unused for 1 s -> Released -> the pod's runtimed deletes the bytes -> gone
    assert wait_until(lambda: phase(session, base, "touch") == "Succeeded", timeout=60)
    touched = get(session, base, "runs/touch").json()["status"]
    short_dir = pod_disk(touched["assignedPod"]) / "persistent" / "short"
    assert touched["outputs"]["cwd"] == str(short_dir)  # it wrote mine.txt there
    gone = wait_until(
        lambda: get(session, base, "persistentworkspaces/short").status_code == 404, timeout=60
    )
    assert gone, ws_status(session, base, "short")
    assert not short_dir.exists()
    assert shared_dir.exists()  # only that workspace's directory

    # the bound pod dies: Lost, never rebound; a new Run waits with a message
    os.kill(RuntimePod.objects.get(name=bound["boundPod"]).pid, signal.SIGKILL)
    assert wait_until(lambda: ws_status(session, base, "shared").get("phase") == "Lost", 60)
    lost = ws_status(session, base, "shared")
    assert lost["boundPod"] == bound["boundPod"]  # not moved to the new pod
    after = in_workspace("after", "true", "shared")
    assert session.post(f"{base}{API}/runs", json=after, timeout=10).status_code == 201
    assert wait_until(
        lambda: "is Lost" in get(session, base, "runs/after").json()["status"].get("message", ""),
        timeout=30,
    )
    assert phase(session, base, "after") == "Pending"
