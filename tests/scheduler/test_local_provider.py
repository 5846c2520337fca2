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

from .fixtures import RUNTIMES, fresh, make_run, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(monkeypatch, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    # a stand-in process: what matters here is the provider's bookkeeping around it
    monkeypatch.setattr(local, "runtimed_argv",
                        lambda: [sys.executable, "-c", "import time; time.sleep(60)"])
    supervisor = Supervisor([], stop_timeout=5)
    provider = local.LocalProvider(supervisor)
    yield provider
    supervisor.stop()


def started_pod(provider) -> RuntimePod:
    make_runtime()
    provider.sync()
    pod = RuntimePod.objects.get()
    RuntimePod.objects.filter(pk=pod.pk).update(ready=True, phase="Running",
                                                last_heartbeat=timezone.now())
    return RuntimePod.objects.get()


def test_a_pod_stopped_on_purpose_fails_its_runs_pod_terminating(provider):
    pod = started_pod(provider)
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    assert fresh(run).assigned_pod == pod.name
    store.delete(RUNTIMES, "default", "bash")  # the Runtime goes: its pods are stopped
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


def test_pods_get_the_artifact_volumes_limits_and_secrets_of_the_portal(settings, tmp_path):
    settings.KRUNTIMES_ARTIFACT_VOLUMES = tmp_path / "volumes"
    settings.KRUNTIMES_SECRETS_DIR = str(tmp_path / "secrets")
    settings.KRUNTIMES_ARTIFACT_MAX_BYTES = 1000
    settings.KRUNTIMES_RUN_ARTIFACT_MAX_BYTES = 5000
    pod = local.PodIdentity("ci", "bash", "bash-abcde", "uid-1")
    env = local.pod_env(pod, {"runs": 2})
    assert env["KRUNTIME_ARTIFACT_VOLUMES"] == str(tmp_path / "volumes")
    assert env["KRUNTIME_SECRETS_DIR"] == str(tmp_path / "secrets" / "ci")  # its namespace's
    assert (env["KRUNTIME_ARTIFACT_MAX_BYTES"], env["KRUNTIME_RUN_ARTIFACT_MAX_BYTES"]) == (
        "1000", "5000")
    settings.KRUNTIMES_SECRETS_DIR = ""
    assert "KRUNTIME_SECRETS_DIR" not in local.pod_env(pod, {"runs": 2})
