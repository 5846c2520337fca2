"""The Run page's Data section: outputs, artifacts out and in, the store, retries, TTL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from scheduling.models import Run

from .test_admin import make_run, make_runtime

pytestmark = pytest.mark.django_db

REF = {
    "name": "dist",
    "driver": "s3",
    "type": "directory",
    "location": {"s3": {"bucket": "ci-artifacts", "key": "ci/namespaces/default/runs/u/dist"}},
    "sizeBytes": 2048,
    "digest": "sha256:" + "ab" * 32,
    "contentType": "application/gzip",
    "createdAt": "2026-11-29T12:00:00Z",
}
STORE = {"driver": "s3", "s3": {"bucket": "ci-artifacts", "prefix": "ci"}}


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


def page(client, run) -> str:
    response = client.get(reverse("admin:scheduling_run_change", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_outputs_artifacts_and_store_are_shown(client):
    make_runtime()
    run = make_run("r1", ttlSecondsAfterFinished=3600)
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        phase="Succeeded",
        finished_at=now,
        ttl_after_finished=timedelta(hours=1),
        status={
            "phase": "Succeeded",
            "outputs": {"tests": "passed", "version": "1.2.3"},
            "artifactRefs": [REF],
            "artifactStore": STORE,
        },
    )
    html = page(client, Run.objects.get(pk=run.pk))
    for text in (
        "tests",
        "passed",
        "1.2.3",
        "dist",
        "2.0\xa0KB",
        "s3://ci-artifacts/ci/namespaces/default/runs/u/dist",
        "sha256:abababababab",
        "application/gzip",
        "s3://ci-artifacts/ci",
        "deleted 3600s after it finished",
    ):
        assert text in html, text


def test_artifact_inputs_and_retry_policy_are_shown(client):
    make_runtime()
    run = make_run(
        "r2",
        artifactInputs=[{"ref": REF, "path": "in/dist"}],
        retryPolicy={"maxAttempts": 3, "backoff": "5s", "retryableReasons": ["RuntimeExecute"]},
    )
    html = page(client, run)
    assert "in/dist" in html and "up to <strong>3</strong> attempts" in html
    assert "backoff 5s" in html and "RuntimeExecute" in html


def test_a_run_in_backoff_says_when_the_next_attempt_may_start(client):
    make_runtime()
    run = make_run("r3", retryPolicy={"maxAttempts": 2})
    later = timezone.now() + timedelta(seconds=30)
    Run.objects.filter(pk=run.pk).update(not_before=later, attempt=2)
    assert "next attempt not before" in page(client, Run.objects.get(pk=run.pk))


def test_a_run_without_data_says_none(client):
    make_runtime()
    html = page(client, make_run("r4"))
    assert "no retryPolicy: one attempt" in html and "kept until deleted" in html


def run_with_conditions(name: str, phase: str, conditions: list[dict]) -> Run:
    from tests.helpers.records import make_run as plain_run  # noqa: PLC0415

    run = plain_run(name)
    status = {**run.status, "phase": phase, "conditions": conditions}
    Run.objects.filter(pk=run.pk).update(phase=phase, status=status)
    return Run.objects.get(pk=run.pk)


def cond(ctype: str, state: str, reason: str = "") -> dict:
    return {
        "type": ctype,
        "status": state,
        "reason": reason or ctype,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def test_a_finished_runs_running_false_is_neutral_not_red(client):
    from scheduling.admin.run_detail import run_condition_tone  # noqa: PLC0415

    done = run_with_conditions(
        "done",
        "Succeeded",
        [
            cond("Scheduled", "True"),
            cond("Running", "False", "Completed"),
            cond("Completed", "True"),
        ],
    )
    page = client.get(reverse("admin:scheduling_run_change", args=[done.pk])).content.decode()
    assert '<span class="k-badge k-unknown" title="">False</span>' in page
    assert '<span class="k-badge k-bad" title="">False</span>' not in page
    listing = client.get(reverse("admin:scheduling_run_changelist")).content.decode()
    assert 'class="k-badge k-unknown" title="Running=False (Completed)"' in listing
    # while a Run waits, a stage not reached is pending; a True carrying the failure is red
    waiting = run_condition_tone(finished=False)
    assert waiting(cond("Scheduled", "False"), "") == "pending"
    assert run_condition_tone(True)(cond("Completed", "True", "Boom"), "Boom") == "bad"
    assert run_condition_tone(True)(cond("Completed", "True"), "") == "ok"
