"""After Bind: idempotent reports, heartbeats, lost pods and executions, dispatch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.machinery.conditions import format_time
from scheduling import dispatch, lifecycle, pods
from scheduling.models import RuntimePod
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import RecordingApp, fresh, make_pod, make_run, make_runtime, report

pytestmark = pytest.mark.django_db


@pytest.fixture
def bound():
    make_runtime()
    pod = make_pod("bash-a")
    run = make_run("r1", timeout="30s", env=[{"name": "GREETING", "value": "hi"}])
    run_pass(default_framework(), timezone.now())
    return fresh(run), pod


def test_running_then_succeeded(bound):
    run, pod = bound
    now = timezone.now()
    assert lifecycle.apply_report(report(run, pod, "Running", startTime=format_time(now)), now)
    running = fresh(run)
    assert running.phase == "Running" and running.status["startTime"] == format_time(now)
    done = report(
        run,
        pod,
        "Succeeded",
        exitCode=0,
        startTime=format_time(now),
        completionTime=format_time(now),
    )
    assert lifecycle.apply_report(done, now)
    finished = fresh(run)
    assert finished.phase == "Succeeded" and finished.status["exitCode"] == 0
    completed = next(c for c in finished.status["conditions"] if c["type"] == "Completed")
    assert (completed["status"], completed["reason"]) == ("True", "Succeeded")
    assert {c["type"] for c in finished.status["conditions"]} == {
        "Scheduled",
        "Running",
        "Completed",
    }


def test_failed_report_keeps_reason_and_exit_code(bound):
    run, pod = bound
    lifecycle.apply_report(
        report(
            run,
            pod,
            "Failed",
            reason="RuntimeExecute",
            exitCode=3,
            message="the step exited with exit code 3",
        ),
        timezone.now(),
    )
    failed = fresh(run)
    assert (failed.phase, failed.status["reason"], failed.status["exitCode"]) == (
        "Failed",
        "RuntimeExecute",
        3,
    )


def test_duplicate_and_late_reports_change_nothing(bound):
    run, pod = bound
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running"), now)
    lifecycle.apply_report(report(run, pod, "Succeeded", exitCode=0), now)
    version = fresh(run).resource_version
    assert not lifecycle.apply_report(report(run, pod, "Succeeded", exitCode=0), now)
    assert not lifecycle.apply_report(report(run, pod, "Failed", exitCode=1), now)
    assert not lifecycle.apply_report(report(run, pod, "Running"), now)
    assert fresh(run).resource_version == version and fresh(run).phase == "Succeeded"


def test_reports_about_another_attempt_or_pod_are_ignored(bound):
    run, pod = bound
    now = timezone.now()
    assert not lifecycle.apply_report({**report(run, pod, "Running"), "attempt": 2}, now)
    assert not lifecycle.apply_report({**report(run, pod, "Running"), "podUID": "other"}, now)
    assert not lifecycle.apply_report({**report(run, pod, "Running"), "uid": "other"}, now)
    assert fresh(run).phase == "Scheduled"


def _row(row: RuntimePod) -> RuntimePod:
    return RuntimePod.objects.get(pk=row.pk)


def _beat(pod_name: str, pod_uid: str, **extra) -> dict:
    return {
        "namespace": "default",
        "runtime": "bash",
        "podName": pod_name,
        "podUID": pod_uid,
        "capacity": {"runs": 2},
        "activeRuns": [],
        "time": format_time(timezone.now()),
        **extra,
    }


def test_a_heartbeat_makes_the_providers_pod_ready_and_reads_capacity_from_the_runtime():
    make_runtime(capacity={"resources": {"runs": 5}})
    row = make_pod("bash-x", ready=False)
    beat = _beat("bash-x", str(row.uid), workspacePath="/w", host="h", pid=1)
    pod, became_ready = pods.record_heartbeat(beat, timezone.now())
    assert became_ready and pod.ready and pod.capacity == {"runs": 5}
    assert _row(row).ready and (_row(row).workspace_path, _row(row).pid) == ("/w", 1)
    _, again = pods.record_heartbeat(beat, timezone.now())
    assert not again


def test_a_heartbeat_never_creates_a_pod_its_provider_does_not_keep():
    """A late heartbeat of a pod whose row its provider removed (the control worker was backed
    up) must not bring it back as a Ready ghost Runs get bound to."""
    make_runtime()
    beat = _beat("bash-ghost", "8d3f0b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b")
    assert pods.record_heartbeat(beat, timezone.now()) == (None, False)
    assert not RuntimePod.objects.filter(name="bash-ghost").exists()


def test_a_heartbeat_of_a_pod_the_local_provider_removed_does_not_resurrect_it(tmp_path, settings):
    from scheduling.providers import local

    settings.DATA_DIR = tmp_path
    make_runtime()
    pod = local.new_identity("default", "bash")
    local.register(pod)
    beat = _beat(pod.name, pod.uid, podIncarnation=pod.incarnation)
    assert pods.record_heartbeat(beat, timezone.now())[1]
    local.unregister(pod)
    late = beat  # sent just before the process died, applied after
    assert pods.record_heartbeat(late, timezone.now()) == (None, False)
    assert not RuntimePod.objects.filter(name=pod.name).exists()


def test_a_heartbeat_of_a_dead_incarnation_never_revives_the_pod():
    """A local pod restarted with ``manage.py up`` keeps its name and UID: a heartbeat its last
    process sent (queued while the control plane was down, fresh enough) is refused, the pod
    stays as its provider left it, and no row is made; the running process's beats count."""
    make_runtime()
    row = make_pod("bash-0", ready=False)
    RuntimePod.objects.filter(pk=row.pk).update(incarnation=2, phase="Pending")
    dead = _beat("bash-0", str(row.uid), podIncarnation=1, pid=4242)
    assert pods.record_heartbeat(dead, timezone.now()) == (None, False)
    assert (_row(row).phase, _row(row).ready, _row(row).pid) == ("Pending", False, None)
    assert pods.record_heartbeat(_beat("bash-0", str(row.uid)), timezone.now()) == (None, False)
    assert RuntimePod.objects.count() == 1
    _, became_ready = pods.record_heartbeat({**dead, "podIncarnation": 2}, timezone.now())
    assert became_ready and _row(row).phase == "Running"
    # the pod removed: no incarnation brings it back
    RuntimePod.objects.all().delete()
    assert pods.record_heartbeat({**dead, "podIncarnation": 2}, timezone.now()) == (None, False)
    assert not RuntimePod.objects.exists()


def test_a_stale_heartbeat_does_not_make_a_pod_ready():
    make_runtime()
    row = make_pod("bash-a", ready=False)
    old = format_time(timezone.now() - timedelta(seconds=16))
    beat = _beat("bash-a", str(row.uid), time=old)
    assert pods.record_heartbeat(beat, timezone.now()) == (None, False)
    assert not _row(row).ready
    fresh_beat = {**beat, "time": format_time(timezone.now() - timedelta(seconds=14))}
    assert pods.record_heartbeat(fresh_beat, timezone.now())[1]


def test_a_heartbeat_keeps_a_terminating_pod_terminating_and_not_ready():
    make_runtime()
    row = make_pod("bash-a", ready=False)
    RuntimePod.objects.filter(pk=row.pk).update(phase="Terminating")
    pod, became_ready = pods.record_heartbeat(_beat("bash-a", str(row.uid)), timezone.now())
    assert not became_ready and (_row(row).phase, _row(row).ready) == ("Terminating", False)
    assert _row(row).last_heartbeat is not None


def test_a_heartbeat_is_ready_only_while_the_provider_says_the_pod_is():
    make_runtime()
    row = make_pod("bash-a", ready=False)
    RuntimePod.objects.filter(pk=row.pk).update(pod_ready=False)  # the Pod's Ready is False
    assert pods.record_heartbeat(_beat("bash-a", str(row.uid)), timezone.now()) == (
        _row(row),
        False,
    )
    assert not _row(row).ready


def test_a_lost_final_report_is_applied_from_the_next_heartbeat(bound, monkeypatch):
    from scheduling.tasks import runtime_pod_heartbeat

    monkeypatch.setattr("portal.celery.app", RecordingApp())  # the confirmation

    run, pod = bound
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running"), now)
    final = report(run, pod, "Succeeded", exitCode=0)  # its own message never arrived
    beat = {
        "namespace": "default",
        "runtime": "bash",
        "podName": pod.name,
        "podUID": str(pod.uid),
        "activeRuns": [],
        "time": format_time(now),
        "recentReports": [final, {"uid": "not-a-uuid"}, "junk"],
    }
    runtime_pod_heartbeat(beat)
    assert (fresh(run).phase, fresh(run).status["exitCode"]) == ("Succeeded", 0)
    version = fresh(run).resource_version
    runtime_pod_heartbeat(beat)  # repeated: nothing changes
    assert fresh(run).resource_version == version


def test_a_heartbeat_from_another_incarnation_under_the_name_changes_nothing():
    """The provider replaces a row whose name now has another UID; a heartbeat never does."""
    make_runtime()
    old = make_pod("bash-a", ready=False)
    beat = _beat("bash-a", "8d3f0b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b")
    assert pods.record_heartbeat(beat, timezone.now()) == (None, False)
    assert [str(p.uid) for p in RuntimePod.objects.filter(name="bash-a")] == [str(old.uid)]
    assert not _row(old).ready


def test_silent_pods_stop_being_ready_and_are_removed_eventually():
    make_runtime()
    make_pod("bash-a", heartbeat_age=16)
    make_pod("bash-b", heartbeat_age=400)
    make_pod("bash-c")  # most pods heard from: silence counts (see test_disruption)
    make_pod("bash-d")
    counts = pods.reconcile_pods(timezone.now())
    assert counts == {"not_ready": 2, "removed": 1}
    assert not RuntimePod.objects.get(name="bash-a").ready


def test_a_run_on_a_pod_that_is_gone_fails_pod_gone(bound):
    run, pod = bound
    RuntimePod.objects.filter(pk=pod.pk).delete()
    assert lifecycle.reconcile_runs(timezone.now())["PodGone"] == 1
    gone = fresh(run)
    assert (gone.phase, gone.status["reason"]) == ("Failed", "PodGone")


def test_a_run_on_a_silent_pod_fails_pod_unhealthy(bound):
    run, pod = bound
    RuntimePod.objects.filter(pk=pod.pk).update(
        last_heartbeat=timezone.now() - timedelta(seconds=19)
    )
    assert lifecycle.reconcile_runs(timezone.now())["PodUnhealthy"] == 0  # not silent enough
    RuntimePod.objects.filter(pk=pod.pk).update(
        last_heartbeat=timezone.now() - timedelta(seconds=21)
    )
    assert lifecycle.reconcile_runs(timezone.now())["PodUnhealthy"] == 1
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodUnhealthy")


def test_a_terminating_pod_lets_its_runs_finish_then_fails_them_pod_terminating(bound):
    run, pod = bound
    start = timezone.now() - timedelta(seconds=30)
    lifecycle.apply_report(report(run, pod, "Running", startTime=format_time(start)), start)
    RuntimePod.objects.filter(pk=pod.pk).update(
        phase="Terminating",
        ready=False,
        last_heartbeat=timezone.now(),
        active_runs=[{"uid": str(run.uid), "attempt": 1}],
    )
    assert lifecycle.reconcile_runs(timezone.now())["PodTerminating"] == 0  # still running it
    RuntimePod.objects.filter(pk=pod.pk).update(active_runs=[])
    assert lifecycle.reconcile_runs(timezone.now())["PodTerminating"] == 1
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodTerminating")


def test_a_terminating_pod_that_went_silent_fails_pod_terminating(bound):
    run, pod = bound
    RuntimePod.objects.filter(pk=pod.pk).update(
        phase="Terminating", last_heartbeat=timezone.now() - timedelta(seconds=21)
    )
    assert lifecycle.reconcile_runs(timezone.now())["PodTerminating"] == 1


def test_a_provider_ending_a_pod_fails_its_runs_at_once(bound):
    run, pod = bound
    failed = lifecycle.fail_runs_on_pod(
        "default", pod.name, str(pod.uid), "PodTerminating", "stopped", timezone.now()
    )
    assert failed == 1
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodTerminating")
    assert (
        lifecycle.fail_runs_on_pod(
            "default", pod.name, str(pod.uid), "PodGone", "x", timezone.now()
        )
        == 0
    )


def test_a_run_the_pod_no_longer_executes_fails_execution_lost(bound):
    run, pod = bound
    start = timezone.now() - timedelta(seconds=30)
    lifecycle.apply_report(report(run, pod, "Running", startTime=format_time(start)), start)
    active = [{"uid": str(run.uid), "attempt": 1}]
    RuntimePod.objects.filter(pk=pod.pk).update(active_runs=active, last_heartbeat=timezone.now())
    assert lifecycle.reconcile_runs(timezone.now()) == {
        "PodGone": 0,
        "PodTerminating": 0,
        "PodUnhealthy": 0,
        "ExecutionLost": 0,
    }
    RuntimePod.objects.filter(pk=pod.pk).update(active_runs=[])  # runtimed restarted
    assert lifecycle.reconcile_runs(timezone.now())["ExecutionLost"] == 1
    assert fresh(run).status["reason"] == "ExecutionLost"


def test_a_just_started_run_gets_a_grace_period(bound):
    run, pod = bound
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running", startTime=format_time(now)), now)
    RuntimePod.objects.filter(pk=pod.pk).update(active_runs=[], last_heartbeat=now)
    assert lifecycle.reconcile_runs(now)["ExecutionLost"] == 0


def test_dispatch_sends_a_self_contained_payload_to_the_pod_queue(bound):
    run, pod = bound
    app = RecordingApp()
    assert dispatch.dispatch([run.pk], timezone.now(), app=app) == 1
    name, kwargs, queue = app.sent[0]
    assert (name, queue) == ("runtimed.execute_run", "runtimed.bash-a")
    payload = kwargs["payload"]
    assert payload["run"] == {
        "namespace": "default",
        "name": "r1",
        "uid": str(run.uid),
        "attempt": 1,
    }
    assert payload["pod"] == {"name": "bash-a", "uid": str(pod.uid)}
    assert payload["source"] == {"inline": "echo hi"}
    assert payload["env"] == [{"name": "GREETING", "value": "hi"}]
    assert payload["timeoutSeconds"] == 30.0
    assert fresh(run).dispatched_at is not None


def test_a_run_bound_while_the_broker_is_down_is_dispatched_when_it_returns(bound):
    run, _ = bound
    assert dispatch.dispatch([run.pk], timezone.now(), app=RecordingApp(fail=True)) == 0
    assert fresh(run).dispatched_at is None
    app = RecordingApp()
    assert dispatch.redispatch(timezone.now(), app=app) == 1
    assert len(app.sent) == 1
    assert dispatch.redispatch(timezone.now(), app=app) == 0  # just sent: not yet due
    later = timezone.now() + dispatch.REDISPATCH_AFTER + timedelta(seconds=1)
    assert dispatch.redispatch(later, app=app) == 1  # not started: sent again (idempotent)


def test_a_scheduled_run_handed_to_a_restarted_pod_gets_the_grace_again(bound):
    """A restarted local pod takes its queue over: the Runs it had not started are not lost
    for not being started at once by the new process, however long the pod was down."""
    run, pod = bound
    later = timezone.now() + lifecycle.UNSTARTED_GRACE + timedelta(seconds=1)
    RuntimePod.objects.filter(pk=pod.pk).update(active_runs=[], last_heartbeat=later)
    assert dispatch.hand_over(pod.namespace, pod.name, str(pod.uid), later) == 1
    assert lifecycle.reconcile_runs(later)["ExecutionLost"] == 0
    much_later = later + lifecycle.UNSTARTED_GRACE + timedelta(seconds=1)
    RuntimePod.objects.filter(pk=pod.pk).update(last_heartbeat=much_later)
    assert lifecycle.reconcile_runs(much_later)["ExecutionLost"] == 1


def test_a_scheduled_run_that_never_starts_on_a_live_pod_fails_execution_lost(bound):
    run, pod = bound
    RuntimePod.objects.filter(pk=pod.pk).update(active_runs=[], last_heartbeat=timezone.now())
    assert lifecycle.reconcile_runs(timezone.now())["ExecutionLost"] == 0  # just bound
    later = timezone.now() + lifecycle.UNSTARTED_GRACE + timedelta(seconds=1)
    RuntimePod.objects.filter(pk=pod.pk).update(last_heartbeat=later)
    assert lifecycle.reconcile_runs(later)["ExecutionLost"] == 1


def test_a_terminal_report_overtaking_running_still_records_that_it_ran(bound):
    run, pod = bound
    now = timezone.now()
    done = report(
        run,
        pod,
        "Succeeded",
        exitCode=0,
        startTime=format_time(now),
        completionTime=format_time(now),
    )
    assert lifecycle.apply_report(done, now)
    assert not lifecycle.apply_report(report(run, pod, "Running"), now)  # late: ignored
    finished = fresh(run)
    assert finished.status["startTime"] == format_time(now)
    running = next(c for c in finished.status["conditions"] if c["type"] == "Running")
    assert (running["status"], running["reason"]) == ("False", "Succeeded")


def test_runtime_status_follows_its_ready_pods():
    from scheduling import runtime_status as runtimes
    from scheduling.models import Runtime

    make_runtime(replicas=2)
    make_pod("bash-a")
    make_pod("bash-b", ready=False)
    assert runtimes.sync_runtime_status(timezone.now()) == 1
    runtime = Runtime.objects.get(name="bash")
    assert runtime.status["readyReplicas"] == 1 and runtime.ready_replicas == 1
    available = runtime.status["conditions"][0]
    assert (available["type"], available["status"], available["message"]) == (
        "Available",
        "True",
        "1/2 Runtime Pods ready",
    )
    assert runtimes.sync_runtime_status(timezone.now()) == 0  # unchanged: no write
    RuntimePod.objects.update(ready=False)
    runtimes.sync_runtime_status(timezone.now())
    runtime = Runtime.objects.get(name="bash")
    assert runtime.status["conditions"][0]["reason"] == "NoReadyRuntimePods"
