"""The control plane's side of a function Run: Ready (active, never terminal) with its endpoint,
the Ready condition on every way out, the function-cleanup finalizer, retry after pod loss."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from scheduling import cleanup, lifecycle
from scheduling.models import Run
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import OPERATOR, RUNS, fresh, make_pod, make_run, make_runtime, report

pytestmark = pytest.mark.django_db

FUNCTION = {
    "source": {"inline": "def invoke(r):\n    return r\n", "inlinePath": "app.py"},
    "mode": {"function": {"handler": "app.invoke", "idleTimeoutSeconds": 60}},
}


@pytest.fixture
def gateway(settings, tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    settings.KRUNTIMES_GATEWAY_URL = "https://portal.example:8443/"
    settings.KRUNTIMES_GATEWAY_CA_FILE = str(ca)
    return ca


def bound_function(name: str = "fn", **spec):
    make_runtime()
    pod = make_pod("bash-a")
    run = make_run(name, **{**FUNCTION, **spec})
    run_pass(default_framework(), timezone.now())
    return fresh(run), pod


def condition(run: Run, ctype: str) -> dict:
    return next(c for c in run.status["conditions"] if c["type"] == ctype)


def test_a_function_run_is_ready_with_its_endpoint(gateway):
    run, pod = bound_function()
    now = timezone.now()
    assert lifecycle.apply_report(report(run, pod, "Running"), now)
    assert lifecycle.apply_report(
        report(run, pod, "Ready", reason="FunctionRegistered", message="serving"), now
    )
    ready = fresh(run)
    assert ready.phase == "Ready" and not ready.is_terminal
    assert condition(ready, "Ready")["status"] == "True"
    assert condition(ready, "Ready")["reason"] == "FunctionRegistered"
    assert ready.status["endpoint"] == {
        "protocol": "HTTPS",
        "url": f"https://portal.example:8443/v1/namespaces/default/runs/fn/{run.uid}/invoke",
        "caBundle": gateway.read_text(),
    }
    assert ready.status["startTime"]


def test_ready_may_overtake_running(gateway):
    run, pod = bound_function()
    assert lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    assert fresh(run).phase == "Ready"
    # the late Running report does not take Ready back
    assert not lifecycle.apply_report(report(run, pod, "Running"), timezone.now())
    assert fresh(run).phase == "Ready"


def test_without_https_no_endpoint_is_published_and_the_condition_says_why(settings):
    settings.KRUNTIMES_GATEWAY_URL = "http://127.0.0.1:8000"
    run, pod = bound_function()
    assert lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    ready = fresh(run)
    assert ready.phase == "Ready" and "endpoint" not in ready.status
    assert "does not serve HTTPS" in condition(ready, "Ready")["message"]


def test_a_task_run_cannot_be_reported_ready(gateway):
    make_runtime()
    pod = make_pod("bash-a")
    run = make_run("task")
    run_pass(default_framework(), timezone.now())
    run = fresh(run)
    assert not lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    assert fresh(run).phase == "Scheduled"


@pytest.mark.parametrize(
    ("phase", "reason"),
    [("Cancelled", "Cancelled"), ("Timeout", "IdleTimeout"), ("Timeout", "Timeout")],
)
def test_a_ready_function_that_ends_is_not_ready_and_has_no_endpoint(gateway, phase, reason):
    run, pod = bound_function()
    lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    assert lifecycle.apply_report(
        report(run, pod, phase, reason=reason, message="ended"), timezone.now()
    )
    ended = fresh(run)
    assert (ended.phase, ended.status["reason"]) == (phase, reason)
    assert condition(ended, "Ready")["status"] == "False"
    assert condition(ended, "Ready")["reason"] == reason
    assert "endpoint" not in ended.status


def test_idle_timeout_is_never_retried(gateway):
    run, pod = bound_function(retryPolicy={"maxAttempts": 3, "retryableReasons": ["IdleTimeout"]})
    lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    lifecycle.apply_report(report(run, pod, "Timeout", reason="IdleTimeout"), timezone.now())
    assert fresh(run).phase == "Timeout" and fresh(run).attempt == 1


def test_pod_loss_makes_a_ready_function_register_again_per_its_retry_policy(gateway):
    run, pod = bound_function(retryPolicy={"maxAttempts": 3})
    lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    pod.delete()
    counts = lifecycle.reconcile_runs(timezone.now())
    assert counts["PodGone"] == 1
    retried = fresh(run)
    assert (retried.phase, retried.attempt) == ("Pending", 2)
    assert condition(retried, "Ready")["status"] == "False"
    assert condition(retried, "Ready")["reason"] == "PodGone"
    assert "assignedPod" not in retried.status


def test_function_runs_alone_carry_the_function_cleanup_finalizer():
    make_runtime()
    assert make_run("task").finalizers == [cleanup.ARTIFACT_CLEANUP]
    assert make_run("fn", **FUNCTION).finalizers == [
        cleanup.ARTIFACT_CLEANUP,
        cleanup.FUNCTION_CLEANUP,
    ]


def test_a_deleted_ready_function_is_cancelled_and_released_once_it_ended(gateway):
    run, pod = bound_function()
    lifecycle.apply_report(report(run, pod, "Ready"), timezone.now())
    store.delete(RUNS, "default", "fn", context=OPERATOR)
    assert cleanup.release(fresh(run)) == cleanup.WAITING
    assert set(fresh(run).finalizers) == {cleanup.ARTIFACT_CLEANUP, cleanup.FUNCTION_CLEANUP}
    lifecycle.apply_report(report(fresh(run), pod, "Cancelled", reason="Cancelled"), timezone.now())
    assert fresh(run).phase == "Cancelled"  # never retried: it was deleted
    assert cleanup.release_deleted(100).cleaned == 1
    assert not Run.objects.filter(pk=run.pk).exists()


def test_a_function_only_finalizer_is_released_and_the_row_goes():
    make_runtime()
    run = make_run("fn", **FUNCTION)
    Run.objects.filter(pk=run.pk).update(finalizers=[cleanup.FUNCTION_CLEANUP])
    store.delete(RUNS, "default", "fn", context=OPERATOR)
    assert cleanup.release(fresh(run)) == cleanup.CLEANED
    assert not Run.objects.filter(pk=run.pk).exists()
