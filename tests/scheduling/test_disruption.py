"""No attempt is failed or retried while its outcome may still arrive: silence after the
control plane itself was cut off, or while most pods are silent at once, is not held against
the pods; reports repeated by heartbeats are applied before the pod's active Runs are read,
and confirmed back; a late final report is recorded, never acted on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling import dispatch, disruption, lifecycle, metrics, pods, tasks
from scheduling.models import ControlPlaneMark, RuntimePod
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import RecordingApp, fresh, make_pod, make_run, make_runtime, report

pytestmark = pytest.mark.django_db


def silent_for(pod: RuntimePod, seconds: float) -> None:
    RuntimePod.objects.filter(pk=pod.pk).update(
        last_heartbeat=timezone.now() - timedelta(seconds=seconds)
    )


def bind_on(count: int):
    """``count`` pods and one Run bound on each."""
    make_runtime()
    pod_rows = [make_pod(f"bash-{i}", runs=1) for i in range(count)]
    runs = [make_run(f"r{i}") for i in range(count)]
    run_pass(default_framework(), timezone.now())
    return pod_rows, [fresh(run) for run in runs]


def test_one_silent_pod_among_many_fails_its_run():
    pod_rows, runs = bind_on(4)
    silent_for(pod_rows[0], 25)
    assert lifecycle.reconcile_runs(timezone.now())["PodUnhealthy"] == 1


def test_a_lone_silent_pod_fails_its_run():
    pod_rows, runs = bind_on(1)
    silent_for(pod_rows[0], 25)
    assert lifecycle.reconcile_runs(timezone.now())["PodUnhealthy"] == 1


@pytest.mark.parametrize("silent", [2, 3])
def test_most_pods_silent_at_once_fails_nothing(silent):
    pod_rows, runs = bind_on(3)
    for pod in pod_rows[:silent]:
        silent_for(pod, 25)
    counts = lifecycle.reconcile_runs(timezone.now())
    assert counts["PodUnhealthy"] == 0
    assert {fresh(run).phase for run in runs} == {"Scheduled"}


def test_most_pods_silent_across_namespaces_fails_nothing():
    from portal.models import Namespace

    pod_rows, runs = bind_on(1)
    Namespace.objects.create(name="ci", spec={"finalizers": []})
    make_runtime(namespace="ci")
    other = make_pod("bash-x", namespace="ci")
    make_run("rx", namespace="ci")
    run_pass(default_framework(), timezone.now())
    silent_for(pod_rows[0], 25)
    silent_for(other, 25)  # each namespace has one pod; together, all are silent
    assert lifecycle.reconcile_runs(timezone.now())["PodUnhealthy"] == 0


def test_after_a_gap_in_its_own_passes_the_control_plane_gives_pods_a_fresh_grace():
    pod_rows, runs = bind_on(1)
    start = timezone.now()
    assert disruption.note_pass(start - timedelta(seconds=40), 10) is None
    resumed = disruption.note_pass(start, 10)  # 40 s since the last pass: cut off
    assert resumed == start
    assert ControlPlaneMark.objects.get(name="resumed").at == start
    silent_for(pod_rows[0], 30)  # silent since before the gap
    assert (
        lifecycle.reconcile_runs(start + timedelta(seconds=5), resumed=resumed)["PodUnhealthy"] == 0
    )
    # still silent 21 s after the control plane resumed: now it counts
    assert (
        lifecycle.reconcile_runs(start + timedelta(seconds=21), resumed=resumed)["PodUnhealthy"]
        == 1
    )


def test_passes_on_time_are_no_gap():
    start = timezone.now()
    disruption.note_pass(start, 10)
    assert disruption.note_pass(start + timedelta(seconds=12), 10) is None
    assert not ControlPlaneMark.objects.filter(name="resumed").exists()


def test_the_beat_pass_uses_the_gap_rule(monkeypatch):
    monkeypatch.setattr(dispatch, "dispatch", lambda pks, now, app=None: 0)
    pod_rows, runs = bind_on(1)
    ControlPlaneMark.objects.create(name="reconcile", at=timezone.now() - timedelta(seconds=60))
    silent_for(pod_rows[0], 30)
    assert tasks.reconcile()["PodUnhealthy"] == 0
    assert fresh(runs[0]).phase == "Scheduled"


def test_pods_silent_at_once_are_not_removed():
    make_runtime()
    for name in ("a", "b"):
        silent_for(make_pod(name), 400)
    assert pods.reconcile_pods(timezone.now())["removed"] == 0
    # nor within REMOVE_AFTER of the control plane resuming
    make_pod("c")
    make_pod("d")
    make_pod("e")
    assert pods.reconcile_pods(timezone.now(), resumed=timezone.now())["removed"] == 0
    assert pods.reconcile_pods(timezone.now())["removed"] == 2


def _late(phase, ended_as) -> float:
    return metrics.LATE_REPORTS.labels(phase, ended_as)._value.get()


def test_a_late_success_after_pod_gone_is_recorded_and_changes_nothing():
    pod_rows, runs = bind_on(1)
    run, pod = runs[0], pod_rows[0]
    RuntimePod.objects.filter(pk=pod.pk).delete()
    lifecycle.reconcile_runs(timezone.now())
    failed = fresh(run)
    assert (failed.phase, failed.status["reason"]) == ("Failed", "PodGone")
    before = _late("Succeeded", "PodGone")
    assert not lifecycle.apply_report(report(run, pod, "Succeeded", exitCode=0), timezone.now())
    assert _late("Succeeded", "PodGone") == before + 1
    after = fresh(failed)
    assert (after.phase, after.attempt, after.resource_version) == (
        "Failed",
        1,
        failed.resource_version,
    )


def test_a_late_success_of_a_retried_attempt_is_recorded_and_starts_nothing():
    make_runtime()
    pod = make_pod("bash-a")
    run = make_run("r1", retryPolicy={"maxAttempts": 3})
    run_pass(default_framework(), timezone.now())
    run = fresh(run)
    RuntimePod.objects.filter(pk=pod.pk).delete()
    lifecycle.reconcile_runs(timezone.now())
    retried = fresh(run)
    assert (retried.phase, retried.attempt) == ("Pending", 2)
    before = _late("Succeeded", "superseded")
    assert not lifecycle.apply_report(report(run, pod, "Succeeded", exitCode=0), timezone.now())
    assert _late("Succeeded", "superseded") == before + 1
    assert fresh(retried).attempt == 2


def test_a_duplicate_report_is_not_late():
    pod_rows, runs = bind_on(1)
    run, pod = runs[0], pod_rows[0]
    done = report(run, pod, "Succeeded", exitCode=0)
    assert lifecycle.apply_report(done, timezone.now())
    before = _late("Succeeded", "superseded"), _late("Succeeded", "PodGone")
    assert not lifecycle.apply_report(done, timezone.now())
    assert (_late("Succeeded", "superseded"), _late("Succeeded", "PodGone")) == before


def test_a_heartbeat_applies_the_reports_it_repeats_before_its_active_runs(monkeypatch):
    sent = RecordingApp()
    monkeypatch.setattr("portal.celery.app", sent)  # what the heartbeat task sends with
    pod_rows, runs = bind_on(1)
    run, pod = runs[0], pod_rows[0]
    now = timezone.now()
    lifecycle.apply_report(
        report(
            run,
            pod,
            "Running",
            startTime=(now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        ),
        now,
    )
    # the Run finished; its report was lost; the next beat lists no active Run but repeats it
    beat = {
        "namespace": "default",
        "podName": pod.name,
        "podUID": str(pod.uid),
        "runtime": "bash",
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "activeRuns": [],
        "recentReports": [report(run, pod, "Succeeded", exitCode=0)],
    }
    tasks.runtime_pod_heartbeat(beat)
    assert lifecycle.reconcile_runs(timezone.now())["ExecutionLost"] == 0
    assert fresh(run).phase == "Succeeded"
    assert sent.sent == [
        (
            "runtimed.confirm_reports",
            {
                "payload": {
                    "pod": {"name": pod.name, "uid": str(pod.uid)},
                    "reports": [{"uid": str(run.uid), "attempt": 1}],
                }
            },
            f"runtimed.{pod.name}",
        )
    ]


def test_only_reports_the_control_plane_no_longer_waits_for_are_confirmed():
    pod_rows, runs = bind_on(2)
    (done_run, waiting_run), pod = runs, pod_rows[0]
    lifecycle.apply_report(report(done_run, pod_rows[0], "Succeeded", exitCode=0), timezone.now())
    app = RecordingApp()
    beat = {"podName": pod.name, "podUID": str(pod.uid)}
    reports = [
        report(done_run, pod_rows[0], "Succeeded"),
        report(waiting_run, pod_rows[1], "Succeeded"),  # not applied (yet)
        {"uid": "00000000-0000-0000-0000-000000000000", "attempt": 1},  # Run gone
        {"uid": "garbage"},
    ]
    assert dispatch.confirm_reports(beat, reports, app=app) == 2
    confirmed = app.sent[0][1]["payload"]["reports"]
    assert confirmed == [
        {"uid": str(done_run.uid), "attempt": 1},
        {"uid": "00000000-0000-0000-0000-000000000000", "attempt": 1},
    ]
    assert dispatch.confirm_reports(beat, [], app=app) == 0
    assert dispatch.confirm_reports(beat, reports[1:2], app=RecordingApp(fail=True)) == 0


def test_a_late_report_a_heartbeat_repeats_is_recorded_too(monkeypatch):
    monkeypatch.setattr("portal.celery.app", RecordingApp())
    pod_rows, runs = bind_on(1)
    run, pod = runs[0], pod_rows[0]
    RuntimePod.objects.filter(pk=pod.pk).delete()
    lifecycle.reconcile_runs(timezone.now())
    before = _late("Succeeded", "PodGone")
    assert (
        lifecycle.apply_missed_reports([report(run, pod, "Succeeded", exitCode=0)], timezone.now())
        == 0
    )
    assert _late("Succeeded", "PodGone") == before + 1
    assert fresh(run).phase == "Failed"
