"""/metrics: the scheduler's series, with labels that never carry user-controlled values."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from jobclasses.metrics import NOT_ACCEPTED_REASONS
from jobclasses.models import JobPhase
from portal.machinery.registry import registry
from scheduling import lifecycle
from scheduling.metrics import ATTEMPT_REASONS
from scheduling.models import Run
from scheduling.scheduler import default_framework, default_plugins, run_pass
from scheduling.scheduler.framework import REASON_TEXT
from scheduling.triggers import SOURCES
from tests.helpers.records import make_pod, make_run, make_runtime, required

pytestmark = pytest.mark.django_db
SERIES = (
    "kruntimes_scheduler_pass_duration_seconds",
    "kruntimes_scheduler_cycle_duration_seconds",
    "kruntimes_scheduler_queue_wait_seconds",
    "kruntimes_scheduler_results_total",
    "kruntimes_scheduler_filter_rejections_total",
    "kruntimes_scheduler_reservation_conflicts_total",
    "kruntimes_scheduler_pending_run_wakeups_total",
    "kruntimes_run_attempts_ended_total",
    "kruntimes_run_artifact_cleanups_total",
    "kruntimes_run_ttl_deletions_total",
    "kruntimes_run_log_bytes_total",
)
ALLOWED_LABELS = {
    "plugin": {plugin.name for plugin in default_plugins()},
    "reason": set(REASON_TEXT) | ATTEMPT_REASONS | set(NOT_ACCEPTED_REASONS) | {"Other"},
    "result": {"bound", "unschedulable", "failed", "cleaned"},
    "phase": {"Succeeded", "Failed", "Timeout", "Cancelled"} | set(JobPhase.values),
    "retried": {"true", "false"},
    "stage": {"run", "capacity", "pod"},
    "source": set(SOURCES),
    "kind": {kind.kind for kind in registry.stored()},
}


def test_metrics_expose_the_scheduler_series_with_bounded_labels(admin_client):
    make_runtime(name="secret-runtime-name", namespace="default")
    make_pod("secret-pod-name", runtime="secret-runtime-name", runs=1)
    group = {"secret-label": "secret-value"}
    for i in range(3):
        make_run(
            f"secret-run-{i}",
            runtime="secret-runtime-name",
            labels=group,
            affinity=required("runAntiAffinity", group),
        )
    run_pass(default_framework(), timezone.now())
    ended = Run.objects.get(name="secret-run-0")
    lifecycle.fail(ended, "SecretMadeUpReason", "secret message", timezone.now())
    body = admin_client.get("/metrics").content.decode()
    assert re.search(
        r'kruntimes_run_attempts_ended_total\{phase="Failed",reason="Other",'
        r'retried="false"\} [1-9]',
        body,
    )
    for series in SERIES:
        assert series in body, series
    assert re.search(
        r'kruntimes_scheduler_filter_rejections_total\{plugin="RuntimePodAvailability"'
        r',reason="AtCapacity"\} [1-9]',
        body,
    )
    assert "secret" not in body
    for name, value in re.findall(r'(\w+)="([^"]*)"', body):
        if name in ALLOWED_LABELS:
            assert value in ALLOWED_LABELS[name], (name, value)
