"""A job whose ``runs-on`` names no Runtime says so at once (reason RuntimeNotFound) and makes
nothing until the Runtime exists; a finished WorkflowRun leaves no never-bound workspace."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.models import WorkItem
from scheduling.models import Run
from tests.helpers.operator import OPERATOR
from tests.helpers.records import make_runtime
from tests.workflows.test_controller import child, finish, job, kind, settle, start, step, tick
from workflows.models import WorkflowRun
from workflows.triggers import QUEUE
from workspaces import cleanup
from workspaces.models import PersistentWorkspace

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()  # "bash"; the jobs below name "bsh"


def cancel(name: str = "wfr") -> None:
    store.patch(
        kind("WorkflowRun"), "default", name, {"spec": {"cancelRequested": True}}, context=OPERATOR
    )


def completed(wfr: WorkflowRun) -> dict:
    return next(c for c in wfr.status["conditions"] if c["type"] == "Completed")


def test_a_missing_runtime_is_named_at_once_and_nothing_is_made():
    wfr = settle(start({"build": job(step("s"), **{"runs-on": "bsh"})}))
    build = wfr.status["jobs"]["build"]
    assert build["phase"] == "Waiting" and build["reason"] == "RuntimeNotFound"
    assert 'Runtime "bsh", which does not exist in namespace "default"' in build["message"]
    assert wfr.phase == "Running" and wfr.status["message"] == build["message"]
    assert completed(wfr)["reason"] == "RuntimeNotFound"
    assert not Run.objects.exists() and not PersistentWorkspace.objects.exists()


def test_only_the_job_on_the_missing_runtime_waits_for_it():
    wfr = settle(start({"ok": job(step("s")), "typo": job(step("s"), **{"runs-on": "bsh"})}))
    assert "reason" not in wfr.status["jobs"]["ok"]  # it waits for a pod, not a Runtime
    assert wfr.status["jobs"]["typo"]["reason"] == "RuntimeNotFound"
    assert child(wfr, "ok", "s") is not None and child(wfr, "typo", "s") is None


def test_creating_the_runtime_wakes_the_waiting_run_and_its_job_starts():
    wfr = settle(start({"build": job(step("s"), **{"runs-on": "bsh"})}))
    WorkItem.objects.all().delete()
    make_runtime("bsh")
    assert list(WorkItem.objects.filter(queue=QUEUE).values_list("key", flat=True)) == [
        str(wfr.uid)
    ]
    wfr = tick(wfr)
    assert "reason" not in wfr.status["jobs"]["build"]
    assert child(wfr, "build", "s") is not None
    assert completed(wfr)["reason"] == "Running"


def test_cancelling_a_run_waiting_for_its_runtime_ends_it_cancelled_with_nothing_left():
    settle(start({"build": job(step("s"), **{"runs-on": "bsh"})}))
    cancel()
    wfr = settle(WorkflowRun.objects.get(name="wfr"))
    assert wfr.phase == "Cancelled"
    assert wfr.status["jobs"]["build"]["phase"] == "Skipped"
    assert not Run.objects.exists() and not PersistentWorkspace.objects.exists()


def test_a_finished_run_deletes_its_never_bound_workspaces_and_keeps_bound_ones():
    # no Runtime Pod exists: both job workspaces stay Pending, the steps' Runs too
    wfr = settle(start({"a": job(step("s")), "b": job(step("s"))}))
    assert set(PersistentWorkspace.objects.values_list("phase", flat=True)) == {"Pending"}
    bound = PersistentWorkspace.objects.get(name="wfr-b")
    bound.phase = "Bound"  # as the binder leaves a workspace it placed on a pod
    bound.save(update_fields=["phase"])
    cancel()
    wfr = settle(WorkflowRun.objects.get(pk=wfr.pk))
    for run in Run.objects.all():  # the cancelled Pending Runs end
        finish(run, "Cancelled")
    wfr = settle(WorkflowRun.objects.get(pk=wfr.pk))
    assert wfr.phase == "Cancelled"
    gone = PersistentWorkspace.objects.filter(deletion_timestamp__isnull=False)
    assert list(gone.values_list("name", flat=True)) == ["wfr-a"]  # its finalizer: see below
    assert PersistentWorkspace.objects.get(name="wfr-b").deletion_timestamp is None
    cleanup.reconcile(timezone.now(), "default")  # the workspace controller's pass
    assert list(PersistentWorkspace.objects.values_list("name", flat=True)) == ["wfr-b"]
