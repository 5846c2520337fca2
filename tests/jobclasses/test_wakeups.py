"""The jobclasses controllers on their work queues: what adds which key, that a controller's
own status writes do not wake it again, that a scheduled or running Job is requeued to be
observed after KRUNTIMES_JOB_POLL_SECONDS, and that beat only resyncs (adds keys)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from jobclasses import job_controller, tasks, triggers
from jobclasses.models import Job
from portal.machinery import workqueue
from portal.models import WorkItem
from tests.helpers.jobclasses import (
    create,
    job_manifest,
    local_class,
    patch,
    set_namespace,
)

pytestmark = pytest.mark.django_db


def keys(queue: str) -> set[str]:
    return set(WorkItem.objects.filter(queue=queue).values_list("key", flat=True))


@pytest.fixture
def queued(django_capture_on_commit_callbacks):
    """Keys are added but not drained (the drain would run eagerly on commit)."""
    with django_capture_on_commit_callbacks(execute=False):
        yield


def test_a_new_job_adds_its_key_and_a_spec_write_adds_it_again(queued):
    set_namespace("default")
    job = create(job_manifest("j1"), namespace="default")
    assert keys(triggers.JOBS) == {"default/j1"}
    WorkItem.objects.all().delete()
    patch(job, {"metadata": {"labels": {"team": "a"}}})
    assert keys(triggers.JOBS) == {"default/j1"}


def test_the_controller_s_own_status_write_does_not_wake_it_again(queued):
    set_namespace("default")
    create(job_manifest("j1"), namespace="default")
    WorkItem.objects.all().delete()
    job = Job.objects.get(name="j1")
    assert job_controller.reconcile(job, timezone.now())  # it wrote: no default class
    assert "default/j1" not in keys(triggers.JOBS)


def test_a_class_change_adds_the_class_and_the_jobs_waiting_on_it(queued):
    set_namespace("default")
    create(job_manifest("waiting", jobClassName="gpu"), namespace="default")
    create(job_manifest("other", jobClassName="cpu"), namespace="default")
    Job.objects.filter(name="other").update(job_class="cpu")  # resolved to another class
    WorkItem.objects.all().delete()
    local_class("gpu")
    assert "gpu" in keys(triggers.CLASSES)
    assert keys(triggers.JOBS) >= {"default/waiting"}
    assert "default/other" not in keys(triggers.JOBS)


def test_a_scheduled_job_is_requeued_to_be_observed_again(settings, monkeypatch, queued):
    settings.KRUNTIMES_JOB_POLL_SECONDS = 7
    set_namespace("default")
    create(job_manifest("j1"), namespace="default")
    scheduled = {"phase": "Running", "conditions": [{"type": "Scheduled", "status": "True"}]}
    Job.objects.filter(name="j1").update(status=scheduled, phase="Running")
    observed: list[str] = []
    monkeypatch.setattr(job_controller, "reconcile", lambda job, now: observed.append(job.name))
    assert tasks.reconcile_job_key("default/j1") == workqueue.Requeue(after=7.0)
    assert observed == ["j1"]
    Job.objects.filter(name="j1").update(
        status={**scheduled, "phase": "Succeeded"}, phase="Succeeded"
    )
    assert tasks.reconcile_job_key("default/j1") is None


def test_a_gone_or_finished_job_is_not_requeued():
    assert tasks.reconcile_job_key("default/nothing") is None


def test_beat_resyncs_every_class_and_unfinished_job_as_keys(queued):
    set_namespace("default")
    local_class("default", default=True)
    create(job_manifest("j1"), namespace="default")
    WorkItem.objects.all().delete()
    tasks.reconcile()
    assert keys(triggers.CLASSES) == {triggers.ALL_CLASSES, "default"}
    assert keys(triggers.JOBS) == {"default/j1"}


def test_the_class_controller_s_status_write_wakes_waiting_jobs_not_itself(queued):
    from jobclasses import class_controller
    from jobclasses.models import JobClass

    set_namespace("default")
    local_class("gpu")
    create(job_manifest("waiting", jobClassName="gpu"), namespace="default")
    JobClass.objects.filter(name="gpu").update(status={})  # as if never reconciled
    WorkItem.objects.all().delete()
    assert class_controller.reconcile_class(JobClass.objects.get(name="gpu"), timezone.now())
    assert keys(triggers.CLASSES) == set()
    assert keys(triggers.JOBS) == {"default/waiting"}
