"""A WorkflowRun's Events: Started, each step's and job's end with why, and the run's end;
each recorded once (a pass that changes nothing records nothing, an undone pass neither)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import history, store
from portal.models import Event
from tests.helpers.operator import OPERATOR
from tests.helpers.records import make_runtime
from tests.workflows.test_controller import child, finish, job, kind, settle, start, step
from workflows import controller
from workflows.models import WorkflowRun

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


def events(wfr) -> list[tuple[str, str, str]]:
    rows = Event.objects.filter(involved_uid=str(wfr.uid)).exclude(reason="NameTaken")
    return [(e.reason, e.type, e.message) for e in rows.order_by("pk")]


def test_a_run_that_succeeds_tells_each_step_each_job_and_its_end_once():
    wfr = settle(start({"build": job(step("a"), step("b"))}))
    finish(child(wfr, "build", "a"))
    wfr = settle(wfr)
    finish(child(wfr, "build", "b"))
    wfr = settle(wfr, times=6)  # more passes than needed: nothing is told twice
    assert wfr.phase == "Succeeded"
    assert events(wfr) == [
        ("Started", "Normal", "the workflow controller started the run"),
        ("StepSucceeded", "Normal", "step a of job build succeeded (Run wfr-build-a)"),
        ("StepSucceeded", "Normal", "step b of job build succeeded (Run wfr-build-b)"),
        ("JobSucceeded", "Normal", "job build succeeded"),
        ("Succeeded", "Normal", "1 of 1 jobs succeeded"),
    ]


def test_a_failed_step_tells_why_its_job_failed_and_what_was_skipped():
    wfr = settle(start({"a": job(step("s")), "b": job(step("t"), needs=["a"])}))
    finish(child(wfr, "a", "s"), "Failed", reason="ExitCode")
    wfr = settle(wfr)
    assert wfr.phase == "Failed"
    assert events(wfr)[1:] == [
        ("StepFailed", "Warning", "step s of job a failed (Run wfr-a-s)"),
        ("JobFailed", "Warning", "job a failed: step s failed"),
        ("JobSkipped", "Normal", "job b was skipped: needs a, which did not succeed"),
        ("Failed", "Warning", "0 of 2 jobs succeeded"),
    ]


def test_a_cancelled_run_says_so():
    wfr = settle(start({"a": job(step("s")), "b": job(step("t"), needs=["a"])}))
    store.patch(
        kind("WorkflowRun"), "default", "wfr", {"spec": {"cancelRequested": True}}, context=OPERATOR
    )
    wfr = settle(WorkflowRun.objects.get(pk=wfr.pk))
    finish(child(wfr, "a", "s"), "Cancelled")
    wfr = settle(wfr)
    assert wfr.phase == "Cancelled"
    assert events(wfr) == [
        ("Started", "Normal", "the workflow controller started the run"),
        ("JobSkipped", "Normal", "job b was skipped: the WorkflowRun was cancelled"),
        ("StepFailed", "Warning", "step s of job a failed (Run wfr-a-s)"),
        ("JobFailed", "Warning", "job a failed: step s failed"),
        ("Cancelled", "Normal", "cancelled: 0 of 2 jobs succeeded"),
    ]


def test_a_pass_that_is_undone_tells_nothing():
    wfr = start({"build": job(step("s"))})
    stale = WorkflowRun.objects.get(pk=wfr.pk)
    other = WorkflowRun.objects.get(pk=wfr.pk)
    assert history.compare_and_set(other, {"labels": {"touched": "yes"}})
    assert controller.reconcile(stale, timezone.now()) is False
    assert events(wfr) == []
