"""A function Run's page: its endpoint (with a curl line), Ready since, and the invocation
figures the owning runtimed's last heartbeat brought (count, rate, recent errors)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from scheduling import lifecycle
from scheduling.models import RuntimePod
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import fresh, make_pod, make_run, make_runtime, report

pytestmark = pytest.mark.django_db

FUNCTION = {
    "source": {"inline": "def invoke(r):\n    return r\n", "inlinePath": "app.py"},
    "mode": {"function": {"handler": "app.invoke"}},
}


def ready_function(settings):
    settings.KRUNTIMES_GATEWAY_URL = "https://portal.example:8443"
    make_runtime()
    pod = make_pod("bash-a")
    run = make_run("fn", **FUNCTION)
    run_pass(default_framework(), timezone.now())
    run = fresh(run)
    lifecycle.apply_report(report(run, pod, "Ready", message="serves"), timezone.now())
    return fresh(run), pod


def test_a_ready_function_shows_its_endpoint_and_invocations(admin_client, settings):
    run, pod = ready_function(settings)
    figures = {
        "invocations": 1234,
        "errors": 2,
        "perSecond": 20.5,
        "recentErrors": ["RESOURCE_EXHAUSTED: one call is in flight"],
        "readySince": "2026-12-04T12:00:00Z",
    }
    RuntimePod.objects.filter(pk=pod.pk).update(
        active_runs=[{"uid": str(run.uid), "attempt": 1, "function": figures}]
    )
    page = admin_client.get(reverse("admin:scheduling_run_change", args=[run.pk])).content.decode()
    assert ">Function<" in page
    assert f"https://portal.example:8443/v1/namespaces/default/runs/fn/{run.uid}/invoke" in page
    assert "curl --cacert ca.crt" in page
    assert "1234 in all · 20.5/s over the last minute" in page
    assert "RESOURCE_EXHAUSTED: one call is in flight" in page


def test_figures_of_another_attempt_are_not_shown(admin_client, settings):
    run, pod = ready_function(settings)
    RuntimePod.objects.filter(pk=pod.pk).update(
        active_runs=[{"uid": str(run.uid), "attempt": 7, "function": {"invocations": 99}}]
    )
    page = admin_client.get(reverse("admin:scheduling_run_change", args=[run.pk])).content.decode()
    assert "99 in all" not in page


def test_a_task_run_has_no_function_section(admin_client):
    make_runtime()
    run = make_run("task")
    page = admin_client.get(reverse("admin:scheduling_run_change", args=[run.pk])).content.decode()
    assert ">Function<" not in page
