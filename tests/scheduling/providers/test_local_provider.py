"""The local provider ends a pod's Runs as soon as it ends the pod: PodTerminating when it
stopped the pod on purpose, PodGone when the pod died."""

from __future__ import annotations

import sys

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.processes import Supervisor
from scheduling.models import RuntimePod
from scheduling.providers import local
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNTIMES, fresh, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(monkeypatch, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    # a stand-in process: what matters here is the provider's bookkeeping around it
    monkeypatch.setattr(
        local, "runtimed_argv", lambda: [sys.executable, "-c", "import time; time.sleep(60)"]
    )
    supervisor = Supervisor([], stop_timeout=5)
    provider = local.LocalProvider(supervisor)
    yield provider
    supervisor.stop()


def started_pod(provider) -> RuntimePod:
    make_runtime()
    provider.sync()
    pod = RuntimePod.objects.get()
    RuntimePod.objects.filter(pk=pod.pk).update(
        ready=True, phase="Running", last_heartbeat=timezone.now()
    )
    return RuntimePod.objects.get()


def test_a_pod_stopped_on_purpose_fails_its_runs_pod_terminating(provider):
    pod = started_pod(provider)
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    assert fresh(run).assigned_pod == pod.name
    store.delete(
        RUNTIMES, "default", "bash", context=OPERATOR
    )  # the Runtime goes: its pods are stopped
    provider.sync()
    ended = fresh(run)
    assert (ended.phase, ended.status["reason"]) == ("Failed", "PodTerminating")
    assert not RuntimePod.objects.exists()


def test_a_pod_that_died_fails_its_runs_pod_gone(provider):
    pod = started_pod(provider)
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    identity = next(p for p in provider.pods.values() if p is not None)
    local.unregister(identity)  # what on_exit does when the process died on its own
    ended = fresh(run)
    assert (ended.phase, ended.status["reason"]) == ("Failed", "PodGone")
    assert not RuntimePod.objects.filter(uid=pod.uid).exists()


def test_a_terminating_pod_takes_no_new_runs(provider):
    started_pod(provider)
    identity = next(p for p in provider.pods.values() if p is not None)
    local.mark_terminating(identity)
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    assert fresh(run).phase == "Pending"


def test_pods_get_the_artifact_volumes_limits_and_their_secrets_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.KRUNTIMES_ARTIFACT_VOLUMES = tmp_path / "volumes"
    settings.KRUNTIMES_ARTIFACT_MAX_BYTES = 1000
    settings.KRUNTIMES_RUN_ARTIFACT_MAX_BYTES = 5000
    pod = local.PodIdentity("ci", "bash", "bash-abcde", "uid-1")
    env = local.pod_env(pod, {"runs": 2})
    assert env["KRUNTIME_ARTIFACT_VOLUMES"] == str(tmp_path / "volumes")
    # the pod's own Secret volume, under its own directory
    assert env["KRUNTIME_SECRETS_DIR"] == str(tmp_path / "pods" / "ci" / "bash-abcde" / "secrets")
    assert (env["KRUNTIME_ARTIFACT_MAX_BYTES"], env["KRUNTIME_RUN_ARTIFACT_MAX_BYTES"]) == (
        "1000",
        "5000",
    )


def _record(workspace, run, pod_uid, phase="Succeeded", where="runs", **extra):
    """What runtimed leaves on the pod's disk for a finished attempt."""
    import json

    report = {
        "namespace": run.namespace,
        "name": run.name,
        "uid": str(run.uid),
        "attempt": run.attempt,
        "podName": run.assigned_pod,
        "podUID": str(pod_uid),
        "phase": phase,
        "reason": "",
        "message": "",
        "exitCode": 0,
        "startTime": None,
        "completionTime": None,
        **extra,
    }
    if where in ("runs", "persistent"):
        root = workspace / "persistent" / "data" if where == "persistent" else workspace
        path = root / ".kruntimes" / "runs" / str(run.uid) / f"attempt-{run.attempt}.result.json"
    else:
        path = workspace / ".kruntimes" / "outbox" / f"{run.uid}.{run.attempt}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report))


@pytest.mark.parametrize("where", ["runs", "persistent", "outbox"])
def test_a_gone_pods_recorded_reports_are_applied_before_its_runs_fail(provider, where):
    pod = started_pod(provider)
    finished, unknown = make_run("r1"), make_run("r2")
    run_pass(default_framework(), timezone.now())
    identity = next(p for p in provider.pods.values() if p is not None)
    _record(identity.workspace, fresh(finished), pod.uid, where=where)
    local.unregister(identity)
    assert (fresh(finished).phase, fresh(finished).status.get("exitCode")) == ("Succeeded", 0)
    assert (fresh(unknown).phase, fresh(unknown).status["reason"]) == ("Failed", "PodGone")


def test_after_a_restart_old_pods_are_read_for_what_they_recorded(provider, settings):
    pod = started_pod(provider)
    finished = make_run("r1", retryPolicy={"maxAttempts": 3})
    lost = make_run("r2", retryPolicy={"maxAttempts": 3})
    run_pass(default_framework(), timezone.now())
    workspace = next(p for p in provider.pods.values() if p is not None).workspace
    _record(workspace, fresh(finished), pod.uid)
    # ``up`` stopped without the pod's on_exit, and starts again: a new provider
    fresh_provider = local.LocalProvider(Supervisor([], stop_timeout=5))
    assert fresh_provider.cleanup_orphans() == 1
    done = fresh(finished)
    assert (done.phase, done.attempt) == ("Succeeded", 1)  # never run again
    retried = fresh(lost)
    assert (retried.phase, retried.attempt) == ("Pending", 2)
    assert "PodGone" in retried.status["message"]
    assert not RuntimePod.objects.exists() and not workspace.exists()


def test_leftover_steps_of_runs_in_a_persistent_workspace_are_killed(tmp_path):
    import subprocess

    step = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        run_dir = tmp_path / "persistent" / "data" / ".kruntimes" / "runs" / "run-uid"
        run_dir.mkdir(parents=True)
        (run_dir / "attempt-1.pgid").write_text(str(step.pid))
        pod = local.PodIdentity("ci", "bash", "bash-leftovers", "uid-1")
        assert local.kill_leftover_steps(pod, tmp_path) >= 1
        assert step.wait(5) == -9
    finally:
        step.kill()
        step.wait()


def test_pods_get_a_termination_grace_shorter_than_the_providers(settings):
    settings.KRUNTIMES_POD_TERMINATION_GRACE_SECONDS = 12
    identity = local.new_identity("default", "bash")
    assert local.pod_env(identity, {"runs": 2})["KRUNTIME_TERMINATION_GRACE_SECONDS"] == "7.0"
