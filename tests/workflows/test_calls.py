"""Workflow calls are finite: a Workflow that reaches itself through ``uses`` (directly or
through others) is refused at admission with the cycle named; at run time a call depth limit
holds (a Workflow changed after admission: exactly MAX_CALL_DEPTH WorkflowRuns, the deepest
failing ``CallDepthExceeded``); cancelling a WorkflowRun cancels its child WorkflowRuns and
their Runs."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from portal.machinery.store import patch
from scheduling.models import Run
from tests.helpers.operator import OPERATOR
from tests.helpers.records import make_runtime
from tests.helpers.workflows import (
    create,
    job,
    kind,
    started_run_manifest,
    step,
    url,
    workflow_manifest,
)
from workflows import controller
from workflows.calls import MAX_CALL_DEPTH, call_depth
from workflows.models import Workflow, WorkflowRun

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


def calling(name: str, *targets: str) -> dict:
    """Workflow ``name`` whose jobs call ``targets`` (job ``a`` the first, ``b`` the next)."""
    return workflow_manifest(name, {"ab"[i]: {"uses": t} for i, t in enumerate(targets)})


def causes(response) -> dict[str, str]:
    assert response.status_code == 422, response.json()
    return {c["field"]: c["message"] for c in response.json()["details"]["causes"]}


def unfinished() -> list[int]:
    return list(
        WorkflowRun.objects.exclude(phase__in=("Succeeded", "Failed", "Cancelled")).values_list(
            "pk", flat=True
        )
    )


def reconcile_each(order: str = "pk") -> bool:
    """One pass over each unfinished WorkflowRun, each read afresh (as the work queue does);
    ``-pk``: the deepest first."""
    pks = sorted(unfinished(), reverse=order == "-pk")
    return any([controller.reconcile(WorkflowRun.objects.get(pk=pk), timezone.now()) for pk in pks])


def drain(order: str = "pk", limit: int = 60) -> None:
    """Reconcile every unfinished WorkflowRun until nothing moves."""
    for _ in range(limit):
        before = WorkflowRun.objects.count()
        if not reconcile_each(order) and WorkflowRun.objects.count() == before:
            return
    raise AssertionError("the WorkflowRuns never settled")


# ------------------------------------------------------------------------------ admission


def test_a_workflow_calling_itself_is_refused_with_the_cycle_named(admin_api):
    response = admin_api.post(url("workflows"), calling("h6", "h6"), format="json")
    assert causes(response) == {"spec.jobs.a.uses": 'Invalid value: "h6": the call cycle h6 → h6'}
    assert response.json()["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    assert not Workflow.objects.filter(name="h6").exists()


def test_a_cycle_through_other_workflows_is_refused_with_its_chain(admin_api):
    for name, target in (("x", "y"), ("y", "z")):
        assert (
            admin_api.post(url("workflows"), calling(name, target), format="json").status_code
            == 201
        )
    response = admin_api.post(url("workflows"), calling("z", "lib", "x"), format="json")
    assert causes(response) == {
        "spec.jobs.b.uses": 'Invalid value: "x": the call cycle z → x → y → z'
    }


def test_an_update_that_closes_a_cycle_is_refused_too(admin_api):
    admin_api.post(url("workflows"), calling("x", "y"), format="json")
    admin_api.post(url("workflows"), workflow_manifest("y"), format="json")
    response = admin_api.patch(
        url("workflows", name="y"),
        json.dumps({"spec": {"jobs": {"build": None, "back": {"uses": "x"}}}}),
        content_type="application/merge-patch+json",
    )
    assert causes(response) == {
        "spec.jobs.back.uses": 'Invalid value: "x": the call cycle y → x → y'
    }


def test_calls_without_a_cycle_are_admitted(admin_api):
    """A diamond (two paths to one Workflow) and a call of a Workflow not yet written."""
    admin_api.post(url("workflows"), workflow_manifest("leaf"), format="json")
    for name, targets in (("left", ["leaf"]), ("right", ["leaf"]), ("top", ["left", "right"])):
        response = admin_api.post(url("workflows"), calling(name, *targets), format="json")
        assert response.status_code == 201, response.json()
    assert (
        admin_api.post(url("workflows"), calling("early", "later"), format="json").status_code
        == 201
    )


def test_the_cycle_is_looked_for_only_when_uses_changes(admin_api):
    """A Workflow whose calls did not change is not refused for a cycle elsewhere (here one
    written past admission): it stays editable; the run-time limit covers it."""
    admin_api.post(url("workflows"), calling("h6", "other"), format="json")
    Workflow.objects.filter(name="h6").update(spec=calling("h6", "h6")["spec"])
    response = admin_api.patch(
        url("workflows", name="h6"),
        json.dumps({"metadata": {"labels": {"team": "a"}}}),
        content_type="application/merge-patch+json",
    )
    assert response.status_code == 200, response.json()


# ------------------------------------------------------------------------------ run time


def self_calling_run() -> WorkflowRun:
    """Workflow h6 calling itself, written past admission (changed after it was admitted)."""
    create(calling("h6", "other"))
    Workflow.objects.filter(name="h6").update(spec=calling("h6", "h6")["spec"])
    return create(started_run_manifest("h6", name="root"))


def test_a_self_calling_workflow_stops_at_the_call_depth_limit():
    assert MAX_CALL_DEPTH == 10  # GitHub Actions: ten levels of workflows
    root = self_calling_run()
    drain()
    runs = list(WorkflowRun.objects.order_by("pk"))
    assert len(runs) == MAX_CALL_DEPTH
    assert [call_depth(run) for run in runs] == list(range(1, MAX_CALL_DEPTH + 1))
    deepest = runs[-1]
    job_status = deepest.status["jobs"]["a"]
    assert job_status["phase"] == "Failed" and job_status["reason"] == "CallDepthExceeded"
    assert f"at most {MAX_CALL_DEPTH} levels" in job_status["message"]
    assert {run.phase for run in runs} == {"Failed"}  # each caller fails with its callee
    assert "CallDepthExceeded" in WorkflowRun.objects.get(pk=root.pk).status["message"]


def test_the_depth_follows_the_callers_not_the_names():
    root = self_calling_run()
    assert call_depth(root) == 1
    drain()
    child = WorkflowRun.objects.get(owner_references__0__uid=str(root.uid))
    assert call_depth(child) == 2


# ------------------------------------------------------------------------------ cancel


def test_cancelling_a_workflow_run_cancels_its_child_workflow_runs_and_their_runs(admin_api):
    create(workflow_manifest("lib", {"work": job(step("s", "sleep 60"))}))
    create(workflow_manifest("mid", {"call": {"uses": "lib"}}))
    create(workflow_manifest("top", {"call": {"uses": "mid"}, "own": job(step("t", "sleep 60"))}))
    root = create(started_run_manifest("top", name="root"))
    drain()
    mid = WorkflowRun.objects.get(name="root-call")
    lib = WorkflowRun.objects.get(name="root-call-call")
    runs = Run.objects.filter(name__in=["root-own-t", "root-call-call-work-s"])
    assert runs.count() == 2 and not any(run.cancel_requested for run in runs)

    response = admin_api.patch(
        url("workflowruns", name="root"),
        json.dumps({"spec": {"cancelRequested": True}}),
        content_type="application/merge-patch+json",
    )
    assert response.status_code == 200, response.json()
    drain()
    assert WorkflowRun.objects.get(pk=mid.pk).cancel_requested
    assert WorkflowRun.objects.get(pk=lib.pk).cancel_requested
    assert all(run.cancel_requested for run in Run.objects.filter(pk__in=runs))
    assert WorkflowRun.objects.get(pk=root.pk).phase == "Running"  # until its Runs have ended


def test_cancelling_the_root_of_a_self_calling_chain_stops_it():
    """The issue's case: a recursion the cancel chases, one level per pass as the recursion
    grows. A WorkflowRun whose caller (at any level) is cancelled calls nothing more: reconciled
    deepest first, not one WorkflowRun is made after the cancel, and every one ends Cancelled."""
    self_calling_run()
    for _ in range(3):  # a few levels deep, still growing
        reconcile_each()
    grown = WorkflowRun.objects.count()
    assert 1 < grown < MAX_CALL_DEPTH
    patch(
        kind("WorkflowRun"),
        "default",
        "root",
        {"spec": {"cancelRequested": True}},
        context=OPERATOR,
    )
    drain(order="-pk")
    assert WorkflowRun.objects.count() == grown
    assert set(WorkflowRun.objects.values_list("phase", flat=True)) == {"Cancelled"}
