"""The Events a Run's life records: Scheduled, Started, Succeeded/Failed, Lost, BackOff,
Retrying, Cancelled; none carries a value from the spec or a Secret."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal import events_recorder
from portal.models import Event
from scheduling import lifecycle
from scheduling.models import RuntimePod
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import fresh, make_pod, make_run, make_runtime, report

pytestmark = pytest.mark.django_db
SECRET_VALUE = "hunter2-very-secret-value"


@pytest.fixture(autouse=True)
def fresh_buckets():
    events_recorder.spam_filter.reset()


def events_of(run) -> list[tuple[str, str, str]]:
    return [
        (e.reason, e.type, e.message)
        for e in Event.objects.filter(involved_uid=str(run.uid)).order_by("resource_version")
    ]


def reasons(run) -> list[str]:
    return [reason for reason, _, _ in events_of(run)]


def schedule(**spec):
    make_runtime()
    pod = make_pod("bash-a")
    run = make_run("r1", **spec)
    run_pass(default_framework(), timezone.now())
    return fresh(run), pod


def test_a_run_that_succeeds_is_scheduled_started_and_succeeded():
    run, pod = schedule()
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running"), now)
    lifecycle.apply_report(report(run, pod, "Succeeded", exitCode=0), now)
    assert events_of(run) == [
        ("Scheduled", "Normal", "Successfully assigned default/r1 to bash-a"),
        ("Started", "Normal", "attempt 1 started on bash-a"),
        ("Succeeded", "Normal", "attempt 1 succeeded"),
    ]
    event = Event.objects.get(reason="Started")
    assert event.involved_object["kind"] == "Run" and event.involved_name == "r1"


def test_a_failure_is_a_warning_naming_its_reason_not_the_report_text():
    run, pod = schedule()
    lifecycle.apply_report(
        report(run, pod, "Failed", reason="RuntimeExecute", message=f"printed {SECRET_VALUE}"),
        timezone.now(),
    )
    assert events_of(run)[-1] == ("Failed", "Warning", "attempt 1 ended Failed (RuntimeExecute)")
    assert not Event.objects.filter(message__contains=SECRET_VALUE).exists()


def test_a_lost_pod_then_a_retry_records_podgone_backoff_and_retrying():
    run, pod = schedule(retryPolicy={"maxAttempts": 2, "backoff": "0s"})
    RuntimePod.objects.filter(pk=pod.pk).delete()
    lifecycle.reconcile_runs(timezone.now())
    assert reasons(run) == ["Scheduled", "PodGone", "BackOff"]
    assert events_of(run)[2] == (
        "BackOff",
        "Warning",
        "attempt 1 failed (PodGone); back-off 0s before attempt 2",
    )
    make_pod("bash-b")
    run_pass(default_framework(), timezone.now() + timedelta(seconds=1))
    assert events_of(run)[-1] == ("Retrying", "Normal", "attempt 2 assigned to bash-b")


def test_an_execution_lost_without_retries_is_lost_then_failed():
    run, pod = schedule()
    lifecycle.fail(fresh(run), "ExecutionLost", "gone", timezone.now())
    assert reasons(run) == ["Scheduled", "Failed", "Lost"]


def test_a_cancelled_pending_run_records_cancelled(admin_api):
    make_runtime()
    run = make_run("r1")
    from portal.machinery import store
    from tests.helpers.operator import OPERATOR
    from tests.helpers.records import RUNS

    store.patch(RUNS, "default", "r1", {"spec": {"cancelRequested": True}}, context=OPERATOR)
    run_pass(default_framework(), timezone.now())
    assert reasons(run) == ["Cancelled"]


def test_no_event_carries_an_env_or_secret_value_of_the_spec(admin_api):
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "stringData": {"token": SECRET_VALUE},
    }
    assert (
        admin_api.post("/api/v1/namespaces/default/secrets", secret, format="json").status_code
        == 201
    )
    run, pod = schedule(
        env=[{"name": "TOKEN", "value": SECRET_VALUE}],
        retryPolicy={"maxAttempts": 2, "backoff": "0s"},
    )
    now = timezone.now()
    lifecycle.apply_report(report(run, pod, "Running"), now)
    lifecycle.apply_report(
        report(run, pod, "Failed", reason="RuntimeError", message=SECRET_VALUE), now
    )
    assert reasons(run) == ["Scheduled", "Started", "BackOff"]
    listed = admin_api.get("/api/v1/namespaces/default/events").content.decode()
    assert SECRET_VALUE not in listed
    assert "hunter2" not in listed


def test_a_status_write_through_the_api_records_the_phase_it_reaches(admin_api):
    # one change path: a /status write by a controller or an operator is a phase change like
    # a report's, with the same Event
    from tests.helpers.runs import merge_patch, runs_url

    run, _ = schedule()
    response = merge_patch(admin_api, f"{runs_url()}/r1/status", {"status": {"phase": "Failed"}})
    assert response.status_code == 200, response.json()
    assert reasons(run) == ["Scheduled", "Failed"]


def test_a_status_write_that_keeps_the_phase_records_nothing(admin_api):
    from tests.helpers.runs import merge_patch, runs_url

    run, _ = schedule()
    response = merge_patch(
        admin_api, f"{runs_url()}/r1/status", {"status": {"message": "still scheduled"}}
    )
    assert response.status_code == 200, response.json()
    assert reasons(run) == ["Scheduled"]


def test_every_writer_announces_a_phase_change_once(admin_api):
    # the watchers of the Run kind (the workflow controller's, the Events') see a phase move
    # whoever writes it: a report as a /status write, and neither twice
    from portal.machinery.registry import registry
    from scheduling.models import Run
    from tests.helpers.runs import merge_patch, runs_url

    heard: list[str] = []

    def listen(run, event):
        if event == "MODIFIED" and run.phase_changed:
            heard.append(run.phase)

    kind = registry.for_model(Run)
    watchers = kind.on_change
    registry.watch(Run, listen)
    try:
        run, pod = schedule()
        lifecycle.apply_report(report(run, pod, "Running"), timezone.now())
        merge_patch(admin_api, f"{runs_url()}/r1/status", {"status": {"message": "m"}})
        merge_patch(admin_api, f"{runs_url()}/r1/status", {"status": {"phase": "Cancelled"}})
    finally:
        kind.on_change = watchers
    assert heard == ["Running", "Cancelled"]
