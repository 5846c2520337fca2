"""The seed's demo Workflow for real, on ``manage.py up``: build's three steps share the job
workspace on one pod, package's dist.tgz reaches deploy as an artifact, the run Succeeds with
``tests: passed`` among build's step outputs; and the artifact outlives the pod that made it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import yaml

from tests.helpers.live import API, phase, ready_pods, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
RUNTIME = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "Runtime",
    "metadata": {"name": "bash"},
    "spec": {
        "template": {"spec": {"containers": [{"name": "runtime", "image": "bash:5"}]}},
        "replicas": 2,
        "artifactStore": {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}},
    },
}


@pytest.fixture
def broker(tmp_path) -> dict[str, str]:
    data = tmp_path / "data"
    data.mkdir()
    return {"CELERY_BROKER_URL": "filesystem://localhost/", "KRUNTIMES_DATA_DIR": str(data)}


def demo_jobs() -> dict:
    path = ROOT / "examples" / "50-workflow-ci-data-sharing-demo.yaml"
    return yaml.safe_load(path.read_text())["spec"]["jobs"]


def wfr_status(session, base, name) -> dict:
    return session.get(f"{base}{API}/workflowruns/{name}", timeout=5).json().get("status", {})


def test_the_demo_workflow_succeeds_and_its_artifact_outlives_the_pod(portal_up):
    from scheduling.models import Run, RuntimePod

    session, base = portal_up
    assert session.post(f"{base}{API}/runtimes", json=RUNTIME, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=60), "Runtime Pods never got ready"
    body = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "WorkflowRun",
        "metadata": {"name": "demo"},
        "spec": {"jobs": demo_jobs(), "inputs": {}},
    }
    created = session.post(f"{base}{API}/workflowruns", json=body, timeout=10)
    assert created.status_code == 201, created.text
    done = wait_until(
        lambda: wfr_status(session, base, "demo").get("phase") in ("Succeeded", "Failed"), 120
    )
    status = wfr_status(session, base, "demo")
    assert done and status["phase"] == "Succeeded", status
    build, deploy = status["jobs"]["build"], status["jobs"]["deploy"]
    assert [s["phase"] for s in build["steps"]] == ["Succeeded"] * 3
    assert [s["phase"] for s in deploy["steps"]] == ["Succeeded"]
    test_step = next(s for s in build["steps"] if s["name"] == "test")
    assert test_step["outputs"] == {"tests": "passed"}
    build_runs = [Run.objects.get(name=s["runName"]) for s in build["steps"]]
    assert len({(r.assigned_pod, r.assigned_pod_uid) for r in build_runs}) == 1  # one workspace
    assert "dist.tgz" in build["artifacts"]

    # the pod that built it dies; the artifact is in the store, not on the pod
    pod = RuntimePod.objects.get(name=build_runs[0].assigned_pod)
    os.kill(pod.pid, signal.SIGKILL)
    assert wait_until(lambda: not RuntimePod.objects.filter(uid=pod.uid).exists(), timeout=60)
    assert wait_until(lambda: ready_pods() == 2, timeout=60)
    again = script_run("reuse", "tar -tzf dist.tgz | grep -q app.py")
    again["spec"]["artifactInputs"] = [{"ref": build["artifacts"]["dist.tgz"], "path": "dist.tgz"}]
    assert session.post(f"{base}{API}/runs", json=again, timeout=10).status_code == 201
    assert wait_until(lambda: phase(session, base, "reuse") in ("Succeeded", "Failed"), 60)
    assert phase(session, base, "reuse") == "Succeeded"
