"""The local provider ends a pod's Runs as soon as it ends the pod: PodTerminating when it
stopped the pod on purpose, PodGone when the pod died. Its pods are named by ordinal and a
stop of ``up`` keeps them (name, UID, disk) for the next start, as StatefulSet pods."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
import uuid

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.machinery.conditions import format_time
from portal.processes import Supervisor
from runtimed import proctree
from scheduling import lifecycle
from scheduling.models import Runtime, RuntimePod
from scheduling.providers import local
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNTIMES, fresh, make_run, make_runtime, report
from tests.helpers.waiting import wait_until

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
    # ``up`` stopped without the pod's on_exit, its Runtime scaled to none meanwhile, and
    # ``up`` starts again: a new provider, which wants no such pod
    Runtime.objects.update(replicas=0)
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


def running(run, pod) -> None:
    """runtimed's Running report for the Run's attempt on ``pod``."""
    run = fresh(run)
    running_report = report(run, pod, "Running", startTime=format_time(timezone.now()))
    assert lifecycle.apply_report(running_report, timezone.now())


@pytest.fixture
def up_provider(provider):
    """The provider as ``manage.py up`` makes it: a stop of everything keeps the pods."""
    provider.keep_on_stop = True
    return provider


def test_pods_are_named_by_ordinal(provider):
    make_runtime(replicas=3)
    provider.sync()
    names = sorted(RuntimePod.objects.values_list("name", flat=True))
    assert names == ["bash-0", "bash-1", "bash-2"]


def test_a_pod_that_died_comes_back_under_its_name_as_a_new_pod(provider):
    pod = started_pod(provider)
    (child,) = provider.supervisor.children
    child.process.kill()
    child.process.wait()
    provider.supervisor._restart_dead(0.0)  # noticed: its on_exit ends the pod
    provider.supervisor._restart_dead(1e12)  # its backoff is over: started again
    again = RuntimePod.objects.get()
    assert again.name == pod.name == "bash-0"
    assert again.uid != pod.uid  # a new pod: its workspaces are Lost, not silently reused


def test_a_stop_of_up_keeps_the_pod_and_the_next_up_starts_it_again(up_provider, settings):
    pod = started_pod(up_provider)
    started, waiting = make_run("r1"), make_run("r2")
    run_pass(default_framework(), timezone.now())
    running(started, pod)
    identity = next(p for p in up_provider.pods.values() if p is not None)
    (identity.workspace / "kept.txt").write_text("mine")
    assert identity.incarnation == 1
    up_provider.supervisor.stop()

    kept = RuntimePod.objects.get()
    assert (kept.name, kept.uid) == (pod.name, pod.uid)
    assert (kept.phase, kept.ready, kept.incarnation) == ("Pending", False, 2)
    assert (identity.workspace / "kept.txt").read_text() == "mine"
    assert not identity.secrets.exists()  # no Secret stays on disk while nothing runs
    # what it had started ended with it; what it had not stays bound to it
    ended = fresh(started)
    assert (ended.phase, ended.status["reason"]) == ("Failed", "PodTerminating")
    assert (fresh(waiting).phase, fresh(waiting).assigned_pod_uid) == ("Scheduled", str(pod.uid))

    # the next ``up``: a new provider and supervisor find it and start it again
    supervisor = Supervisor([], stop_timeout=5)
    after = local.LocalProvider(supervisor, keep_on_stop=True)
    try:
        assert after.cleanup_orphans() == 0
        restarted = timezone.now()
        after.sync()
        again = RuntimePod.objects.get()
        assert (again.name, again.uid) == (pod.name, pod.uid)
        assert again.incarnation > kept.incarnation  # a new start: a new incarnation
        (child,) = supervisor.children
        assert (child.env["KRUNTIME_POD_UID"], child.env["KRUNTIME_POD_INCARNATION"]) == (
            str(pod.uid),
            str(again.incarnation),
        )
        assert child.env["KRUNTIME_WORKSPACE"] == str(identity.workspace)
        assert (identity.workspace / "kept.txt").read_text() == "mine"
        # the Run it had not started is handed to the new process: its grace starts now
        assert fresh(waiting).dispatched_at >= restarted
    finally:
        supervisor.stop()


def test_a_kept_pods_old_heartbeats_are_refused_and_its_new_ones_heard(up_provider):
    from scheduling import pods

    pod = started_pod(up_provider)
    beat = {
        "namespace": "default",
        "runtime": "bash",
        "podName": pod.name,
        "podUID": str(pod.uid),
        "podIncarnation": 1,
        "activeRuns": [],
        "time": format_time(timezone.now()),
    }
    up_provider.supervisor.stop()
    assert pods.record_heartbeat(beat, timezone.now()) == (None, False)  # the stopped one's
    assert not RuntimePod.objects.get().ready
    supervisor = Supervisor([], stop_timeout=5)
    try:
        local.LocalProvider(supervisor, keep_on_stop=True).sync()
        assert pods.record_heartbeat(beat, timezone.now()) == (None, False)
        current = RuntimePod.objects.get().incarnation
        _, ready = pods.record_heartbeat({**beat, "podIncarnation": current}, timezone.now())
        assert ready
    finally:
        supervisor.stop()


def test_a_pod_whose_disk_is_gone_is_not_kept(up_provider):
    pod = started_pod(up_provider)
    identity = next(p for p in up_provider.pods.values() if p is not None)
    up_provider.supervisor.stop()
    shutil.rmtree(identity.workspace)
    supervisor = Supervisor([], stop_timeout=5)
    try:
        local.LocalProvider(supervisor, keep_on_stop=True).sync()
        again = RuntimePod.objects.get()
        assert again.name == pod.name and again.uid != pod.uid
    finally:
        supervisor.stop()


def test_the_runtimed_of_a_killed_up_is_drained_and_its_pod_kept(up_provider, settings):
    """``kill -9`` of ``up`` leaves its pods' runtimed running (each in its own session): the
    next ``up`` stops them (SIGTERM: they drain) before it starts the pods again."""
    pod = started_pod(up_provider)
    (child,) = up_provider.supervisor.children
    orphan = child.process
    up_provider.supervisor.children.clear()  # up died: nothing stops or watches its children
    try:
        after = local.LocalProvider(Supervisor([], stop_timeout=5), keep_on_stop=True)
        assert after.cleanup_orphans() == 0
        assert orphan.wait(5) == -signal.SIGTERM  # drained, not killed
        kept = RuntimePod.objects.get()
        assert (kept.uid, kept.incarnation, kept.ready) == (pod.uid, 2, False)
    finally:
        orphan.kill()
        orphan.wait()


def test_a_runtimed_that_ignores_the_drain_is_killed_after_the_grace(tmp_path):
    import subprocess

    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    identity = local.PodIdentity("ci", "bash", "bash-0", str(uuid.uuid4()))
    stubborn = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, "KRUNTIME_POD_UID": identity.uid},
        start_new_session=True,
    )
    try:
        assert wait_until(lambda: proctree.pod_daemons(identity.uid), timeout=5)
        time.sleep(0.3)  # its SIGTERM handler is set
        assert local.drain_orphans([identity], grace=0.5) == 1
        assert stubborn.wait(5) == -signal.SIGKILL
    finally:
        stubborn.kill()
        stubborn.wait()
