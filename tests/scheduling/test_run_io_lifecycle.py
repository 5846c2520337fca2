"""Reports that carry outputs and artifacts, retries after a backoff, and cancelling bound Runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.machinery import store
from scheduling import dispatch, lifecycle
from scheduling.models import RuntimePod
from scheduling.scheduler import default_framework, run_pass
from scheduling.scheduler.loading import pending_runs
from tests.helpers.operator import OPERATOR
from tests.helpers.records import (
    RUNS,
    RecordingApp,
    fresh,
    make_pod,
    make_run,
    make_runtime,
    report,
)

pytestmark = pytest.mark.django_db

STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
REF = {
    "name": "dist",
    "driver": "filesystem",
    "type": "directory",
    "location": {
        "filesystem": {"path": "namespaces/default/runs/u/dist", "volumeClaimName": "artifacts"}
    },
    "sizeBytes": 10,
    "digest": "sha256:" + "a" * 64,
    "contentType": "application/gzip",
    "createdAt": "2026-11-29T12:00:00Z",
}


def bind(name="r1", **spec):
    make_runtime(artifactStore=STORE)
    pod = make_pod("bash-a")
    run = make_run(name, **spec)
    run_pass(default_framework(), timezone.now())
    return fresh(run), pod


def test_dispatch_carries_the_runtime_store_and_artifact_inputs():
    run, _ = bind(artifactInputs=[{"ref": REF, "path": "in/dist"}])
    app = RecordingApp()
    dispatch.dispatch([run.pk], timezone.now(), app=app)
    payload = app.sent[0][1]["payload"]
    assert payload["artifactStore"] == STORE
    assert payload["artifactInputs"] == [{"ref": REF, "path": "in/dist"}]


def test_running_report_keeps_the_store_snapshot_and_the_final_one_outputs_and_refs():
    run, pod = bind()
    now = timezone.now()
    assert lifecycle.apply_report(report(run, pod, "Running", artifactStore=STORE), now)
    assert fresh(run).status["artifactStore"] == STORE
    done = report(
        run,
        pod,
        "Succeeded",
        exitCode=0,
        outputs={"tests": "passed"},
        artifactRefs=[REF],
        artifactStore=STORE,
    )
    assert lifecycle.apply_report(done, now)
    status = fresh(run).status
    assert status["outputs"] == {"tests": "passed"}
    assert status["artifactRefs"] == [REF]
    assert status["artifactStore"] == STORE


@pytest.mark.parametrize(
    "reason", ["OutputsInvalid", "OutputsTooLarge", "ArtifactInvalid", "PrepareSource"]
)
def test_outputs_artifact_and_prepare_failures_end_the_run_without_retry(reason):
    run, pod = bind(retryPolicy={"maxAttempts": 3, "retryableReasons": [reason]})
    lifecycle.apply_report(
        report(run, pod, "Failed", reason=reason, exitCode=0, message="key 'x' is over 128 bytes"),
        timezone.now(),
    )
    ended = fresh(run)
    assert (ended.phase, ended.status["reason"], ended.attempt) == ("Failed", reason, 1)


def test_a_prepare_source_failure_ends_at_once_even_with_a_retry_policy():
    run, pod = bind(retryPolicy={"maxAttempts": 3})
    lifecycle.apply_report(
        report(
            run, pod, "Failed", reason="PrepareSource", message="git clone failed (exit code 128)"
        ),
        timezone.now(),
    )
    ended = fresh(run)
    assert (ended.phase, ended.status["reason"], ended.attempt) == ("Failed", "PrepareSource", 1)
    assert ended.not_before is None


def test_a_multi_line_report_message_is_stored_on_one_line():
    run, pod = bind()
    lifecycle.apply_report(
        report(
            run,
            pod,
            "Failed",
            reason="RuntimeError",
            message="boom\nTraceback (most recent call last):\n  x\n",
        ),
        timezone.now(),
    )
    status = fresh(run).status
    assert status["message"] == "boom; Traceback (most recent call last):; x"
    completed = next(c for c in status["conditions"] if c["type"] == "Completed")
    assert completed["message"] == status["message"]


def test_a_cancelled_report_ends_the_run_cancelled():
    run, pod = bind()
    lifecycle.apply_report(report(run, pod, "Cancelled", reason="Cancelled"), timezone.now())
    assert fresh(run).phase == "Cancelled"
    assert fresh(run).finished_at is not None


def test_a_retryable_failure_starts_the_next_attempt_after_its_backoff():
    run, pod = bind(
        retryPolicy={"maxAttempts": 3, "backoff": "2s", "retryableReasons": ["RuntimeExecute"]}
    )
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running"), now)
    lifecycle.apply_report(
        report(
            run,
            pod,
            "Failed",
            reason="RuntimeExecute",
            exitCode=3,
            message="the step exited with exit code 3",
        ),
        now,
    )
    retried = fresh(run)
    assert (retried.phase, retried.attempt, retried.assigned_pod) == ("Pending", 2, "")
    assert retried.not_before == now + timedelta(seconds=2)
    assert retried.finished_at is None and "completionTime" not in retried.status
    assert "attempt 1 failed (RuntimeExecute" in retried.status["message"]
    scheduled = next(c for c in retried.status["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "BackOff")
    # the scheduler leaves it alone until the backoff is over
    assert [r.pk for r in pending_runs(10, now=now + timedelta(seconds=1))] == []
    assert [r.pk for r in pending_runs(10, now=now + timedelta(seconds=2))] == [run.pk]
    run_pass(default_framework(), now + timedelta(seconds=1))
    assert fresh(run).phase == "Pending"
    run_pass(default_framework(), now + timedelta(seconds=2))
    assert (fresh(run).phase, fresh(run).attempt) == ("Scheduled", 2)


def test_attempts_count_up_to_max_attempts_with_doubling_backoff():
    run, pod = bind(retryPolicy={"maxAttempts": 3, "backoff": "1s"})
    now = timezone.now()
    waits = []
    for attempt in (1, 2, 3):
        run = fresh(run)
        assert (run.phase, run.attempt) == ("Scheduled", attempt)
        lifecycle.apply_report(report(run, pod, "Failed", reason="RuntimeError"), now)
        ended = fresh(run)
        if ended.phase == "Pending":
            waits.append((ended.not_before - now).total_seconds())
            now = ended.not_before
            run_pass(default_framework(), now)
    assert waits == [1.0, 2.0]
    ended = fresh(run)
    assert (ended.phase, ended.attempt, ended.status["reason"]) == ("Failed", 3, "RuntimeError")


def test_a_pod_lost_mid_run_is_retried_when_the_policy_allows():
    run, pod = bind(retryPolicy={"maxAttempts": 2, "backoff": "1s"})
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running"), now)
    RuntimePod.objects.filter(pk=pod.pk).delete()
    assert lifecycle.reconcile_runs(now)["PodGone"] == 1
    assert (fresh(run).phase, fresh(run).attempt) == ("Pending", 2)


def test_a_cancel_requested_during_the_attempt_is_not_retried():
    run, pod = bind(retryPolicy={"maxAttempts": 3})
    store.patch(RUNS, "default", run.name, {"spec": {"cancelRequested": True}}, context=OPERATOR)
    lifecycle.apply_report(report(run, pod, "Failed", reason="PodGone"), timezone.now())
    assert fresh(run).phase == "Failed"


def test_cancelling_a_run_in_backoff_ends_it_at_once():
    run, pod = bind(retryPolicy={"maxAttempts": 3, "backoff": "30s"})
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Failed", reason="PodGone"), now)
    store.patch(RUNS, "default", run.name, {"spec": {"cancelRequested": True}}, context=OPERATOR)
    run_pass(default_framework(), now)
    assert fresh(run).phase == "Cancelled"


def test_late_report_of_the_failed_attempt_does_not_touch_the_next_one():
    run, pod = bind(retryPolicy={"maxAttempts": 3, "backoff": "1s"})
    now = timezone.now()
    first = report(run, pod, "Failed", reason="RuntimeError")
    lifecycle.apply_report(first, now)
    version = fresh(run).resource_version
    assert not lifecycle.apply_report(first, now)
    assert not lifecycle.apply_report({**first, "phase": "Succeeded"}, now)
    assert fresh(run).resource_version == version


@pytest.mark.parametrize("phase", ["Scheduled", "Running"])
def test_cancelling_a_bound_run_sends_a_cancel_to_its_pod(phase):
    run, pod = bind()
    if phase == "Running":
        lifecycle.apply_report(report(run, pod, "Running"), timezone.now())
    store.patch(RUNS, "default", run.name, {"spec": {"cancelRequested": True}}, context=OPERATOR)
    app = RecordingApp()
    now = timezone.now()
    assert dispatch.send_cancels([run.pk], now, app=app) == 1
    name, kwargs, queue = app.sent[0]
    assert (name, queue) == ("runtimed.cancel_run", "runtimed.bash-a")
    assert kwargs["payload"] == {
        "run": {"namespace": "default", "name": "r1", "uid": str(run.uid), "attempt": 1},
        "pod": {"name": "bash-a", "uid": str(pod.uid)},
    }
    assert fresh(run).cancel_sent_at == now


def test_a_lost_cancel_is_sent_again_until_the_run_ends():
    run, pod = bind()
    store.patch(RUNS, "default", run.name, {"spec": {"cancelRequested": True}}, context=OPERATOR)
    now = timezone.now()
    assert dispatch.resend_cancels(now, app=RecordingApp(fail=True)) == 0  # broker down
    app = RecordingApp()
    assert dispatch.resend_cancels(now, app=app) == 1
    assert dispatch.resend_cancels(now + timedelta(seconds=5), app=app) == 0  # just sent
    assert dispatch.resend_cancels(now + timedelta(seconds=11), app=app) == 1
    lifecycle.apply_report(report(run, pod, "Cancelled", reason="Cancelled"), now)
    assert dispatch.resend_cancels(now + timedelta(seconds=30), app=app) == 0


def test_runs_not_asked_to_stop_get_no_cancel():
    run, _ = bind()
    assert dispatch.resend_cancels(timezone.now(), app=RecordingApp()) == 0


def test_a_report_with_an_invalid_reason_still_ends_the_run():
    run, pod = bind()
    assert lifecycle.apply_report(
        report(run, pod, "Failed", reason="not a reason!", message="boom"), timezone.now()
    )
    ended = fresh(run)
    assert (ended.phase, ended.status["reason"]) == ("Failed", "RuntimeError")
    assert "invalid reason 'not a reason!'" in ended.status["message"]


def test_the_log_tail_on_a_final_report_is_stored_before_the_run_ends():
    from scheduling import logs
    from scheduling.tasks import report_run

    run, pod = bind()
    tail = {
        "namespace": "default",
        "name": "r1",
        "uid": str(run.uid),
        "attempt": 1,
        "podUID": str(pod.uid),
        "offset": 0,
        "size": 6,
        "text": "hello\n",
    }
    assert report_run(report(run, pod, "Succeeded", exitCode=0, log=tail))
    assert fresh(run).phase == "Succeeded"
    assert logs.read_log(fresh(run), 1).text == "hello\n"


def test_only_runs_found_unplaceable_or_due_after_backoff_wait_for_capacity():
    now = timezone.now()
    make_runtime()
    assert not lifecycle.runs_wait_for_capacity(now)
    fresh_run = make_run("new")  # not considered yet: it has its own wake-up
    assert not lifecycle.runs_wait_for_capacity(now)
    run_pass(default_framework(), now)  # no pods: it is found unplaceable
    assert fresh(fresh_run).status["message"]
    assert lifecycle.runs_wait_for_capacity(now)
    store.patch(RUNS, "default", "new", {"spec": {"cancelRequested": True}}, context=OPERATOR)
    run_pass(default_framework(), now)
    assert not lifecycle.runs_wait_for_capacity(now)
    backoff = make_run("retried")
    from scheduling.models import Run

    Run.objects.filter(pk=backoff.pk).update(
        not_before=now + timedelta(seconds=30), status={"phase": "Pending", "message": "x"}
    )
    assert not lifecycle.runs_wait_for_capacity(now)
    assert lifecycle.runs_wait_for_capacity(now + timedelta(seconds=31))
