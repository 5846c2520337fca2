"""Rerunning a finished WorkflowRun (``spec.rerunOf``): who may, which runs, what is copied,
what a rerun of failed jobs only carries over (outputs and artifacts feeding the jobs that run
again), the link both ways, its Events, and what keeps the carried Runs alive."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import gc, store
from portal.models import Event
from scheduling.models import Run
from tests.helpers.operator import OPERATOR
from tests.helpers.runs import merge_patch
from tests.helpers.workflows import causes_of, kind, url
from tests.helpers.workspace_access import bind_role, make_role
from tests.helpers.workspaces import make_namespace
from tests.workflows.test_controller import child, finish, ref, runtime, settle, start
from workflows.models import WorkflowRun
from workflows.reruns import RERUN_OF_LABEL, reruns_of, source_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures(runtime.__name__)]

API = "kruntimes.io/v1alpha1"


def build_deploy():
    """build (an output and an artifact) then deploy reading both."""
    return {
        "build": {
            "runs-on": "bash",
            "steps": [{"name": "make", "run": "make"}],
            "outputs": {"version": "${{ steps.make.outputs.version }}"},
        },
        "deploy": {
            "runs-on": "bash",
            "needs": ["build"],
            "steps": [
                {
                    "name": "ship",
                    "run": "ship ${{ jobs.build.outputs.version }} ${{ inputs.where }}",
                    "artifacts": [{"from": "jobs.build.artifacts.dist", "path": "dist"}],
                }
            ],
        },
    }


def failed_run(name="wfr") -> WorkflowRun:
    """build succeeded (version 1.2, artifact dist), deploy failed."""
    wfr = settle(start(build_deploy(), name=name, inputs={"where": "prod"}))
    finish(child(wfr, "build", "make"), outputs={"version": "1.2"}, artifacts=[ref("dist")])
    wfr = settle(wfr)
    finish(child(wfr, "deploy", "ship"), phase="Failed", reason="Error")
    wfr = settle(wfr)
    assert wfr.phase == "Failed"
    return wfr


def rerun_body(source="wfr", new="again", **rerun_of):
    return {
        "apiVersion": API,
        "kind": "WorkflowRun",
        "metadata": {"name": new},
        "spec": {"rerunOf": {"name": source, **rerun_of} if source else rerun_of},
    }


def deleting(run: Run) -> bool:
    """Gone, or Terminating (a Run's finalizer clears its artifacts first)."""
    found = Run.objects.filter(pk=run.pk).first()
    return found is None or found.deletion_timestamp is not None


def post(api, body, namespace="default"):
    return api.post(url("workflowruns", namespace), body, format="json")


def test_a_rerun_copies_the_spec_records_the_uid_and_labels_the_link(admin_api):
    old = failed_run()
    response = post(admin_api, rerun_body())
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["spec"]["rerunOf"] == {"name": "wfr", "failedJobsOnly": False, "uid": str(old.uid)}
    assert body["spec"]["jobs"] == old.spec["jobs"]
    assert body["spec"]["inputs"] == {"where": "prod"}
    assert body["metadata"]["labels"][RERUN_OF_LABEL] == "wfr"
    new = WorkflowRun.objects.get(name="again")
    assert source_of(new) == old
    assert list(reruns_of(old)) == [new]


def test_a_label_set_by_hand_links_nothing(admin_api):
    old = failed_run()
    body = {
        "apiVersion": API,
        "kind": "WorkflowRun",
        "metadata": {"name": "fake", "labels": {RERUN_OF_LABEL: "wfr"}},
        "spec": {"jobs": build_deploy(), "inputs": {"where": "x"}},
    }
    assert post(admin_api, body).status_code == 201
    assert list(reruns_of(old)) == []


def test_the_named_run_must_exist_in_the_namespace(admin_api):
    found = causes_of(post(admin_api, rerun_body("nope")))
    assert list(found) == ["spec.rerunOf.name"]
    assert "Not found" in found["spec.rerunOf.name"]


def test_a_run_still_running_cannot_be_rerun(admin_api):
    wfr = settle(start(build_deploy(), inputs={"where": "x"}))
    assert wfr.phase == "Running"
    found = causes_of(post(admin_api, rerun_body()))
    assert "is still running" in found["spec.rerunOf.name"]


def test_a_run_being_deleted_cannot_be_rerun(admin_api):
    failed_run()
    WorkflowRun.objects.filter(name="wfr").update(deletion_timestamp=timezone.now())
    assert "is being deleted" in causes_of(post(admin_api, rerun_body()))["spec.rerunOf.name"]


def test_a_uid_given_is_a_precondition(admin_api):
    failed_run()
    found = causes_of(post(admin_api, rerun_body(uid="not-that-one")))
    assert list(found) == ["spec.rerunOf.uid"]


def test_rerun_of_requires_a_name_and_a_boolean(admin_api):
    found = causes_of(post(admin_api, rerun_body(None, failedJobsOnly="yes")))
    assert {"spec.rerunOf.name", "spec.rerunOf.failedJobsOnly"} <= set(found)


def test_inputs_may_be_overridden_but_not_invented_nor_with_failed_jobs_only(admin_api):
    failed_run()
    body = rerun_body()
    body["spec"]["inputs"] = {"where": "staging"}
    created = post(admin_api, body)
    assert created.status_code == 201, created.json()
    assert created.json()["spec"]["inputs"] == {"where": "staging"}
    body = rerun_body(new="again2")
    body["spec"]["inputs"] = {"nope": "x"}
    assert list(causes_of(post(admin_api, body))) == ["spec.inputs.nope"]
    body = rerun_body(new="again3", failedJobsOnly=True)
    body["spec"]["inputs"] = {"where": "staging"}
    assert list(causes_of(post(admin_api, body))) == ["spec.inputs"]


def test_a_rerun_gives_no_jobs_of_its_own(admin_api):
    failed_run()
    body = rerun_body()
    body["spec"]["jobs"] = {"other": {"runs-on": "bash", "steps": [{"name": "s", "run": "x"}]}}
    assert "spec.jobs" in causes_of(post(admin_api, body))


def test_rerun_of_is_immutable(admin_api):
    failed_run()
    failed_run("second")
    assert post(admin_api, rerun_body()).status_code == 201
    response = merge_patch(
        admin_api, url("workflowruns", name="again"), {"spec": {"rerunOf": {"name": "second"}}}
    )
    assert "spec.rerunOf" in causes_of(response)


def test_rerunning_needs_get_on_the_old_run_as_well_as_create(user_api):
    failed_run()
    create_only = {
        "apiGroups": ["kruntimes.io"],
        "resources": ["workflowruns"],
        "verbs": ["create"],
    }
    make_role("starter", [create_only])
    bind_role("starter", "starter")
    response = post(user_api, rerun_body())
    assert response.status_code == 403
    assert 'cannot get resource "workflowruns"' in response.json()["message"]
    rule = {**create_only, "verbs": ["create", "get"]}
    make_role("rerunner", [rule])
    bind_role("rerunner", "rerunner")
    assert post(user_api, rerun_body()).status_code == 201


def test_the_name_is_namespace_local(user_api):
    """alice may create and read WorkflowRuns in "team" only: a run of that name in default
    is neither rerun nor revealed."""
    failed_run()
    make_namespace("team")
    rule = {"apiGroups": ["kruntimes.io"], "resources": ["workflowruns"], "verbs": ["*"]}
    make_role("team", [rule], namespace="team")
    bind_role("team", "team", namespace="team")
    found = causes_of(post(user_api, rerun_body(), namespace="team"))
    assert 'no WorkflowRun of that name in namespace "team"' in found["spec.rerunOf.name"]
    body = rerun_body()
    body["metadata"]["namespace"] = "default"
    assert post(user_api, body, namespace="default").status_code == 403


def test_a_full_rerun_runs_every_job_again(admin_api):
    old = failed_run()
    assert post(admin_api, rerun_body()).status_code == 201
    new = settle(WorkflowRun.objects.get(name="again"))
    assert new.status["jobs"]["build"]["phase"] == "Waiting"
    assert child(new, "build", "make") is not None
    assert child(new, "build", "make").name != child(old, "build", "make").name


def test_failed_jobs_only_carries_the_succeeded_jobs_and_feeds_the_rest(admin_api):
    old = failed_run()
    response = post(admin_api, rerun_body(failedJobsOnly=True))
    assert response.status_code == 201, response.json()
    new = settle(WorkflowRun.objects.get(name="again"))
    build = new.status["jobs"]["build"]
    assert build["phase"] == "Succeeded" and build["reason"] == "CarriedOver"
    assert build["outputs"] == {"version": "1.2"}
    assert build["steps"][0]["runName"] == child(old, "build", "make").name
    assert child(new, "build", "make") is None  # nothing ran again for it
    ship = child(new, "deploy", "ship")
    assert ship.spec["source"]["inline"] == "ship 1.2 prod"
    assert ship.spec["artifactInputs"] == [{"ref": ref("dist"), "path": "dist"}]
    finish(ship)
    new = settle(new)
    assert new.phase == "Succeeded"


def test_the_rerun_owns_the_carried_runs_too_so_deleting_the_old_run_keeps_them(admin_api):
    old = failed_run()
    post(admin_api, rerun_body(failedJobsOnly=True))
    new = settle(WorkflowRun.objects.get(name="again"))
    make = child(old, "build", "make")
    owners = {(r["uid"], r.get("controller")) for r in make.owner_references}
    assert owners == {(str(old.uid), True), (str(new.uid), False)}
    failed_ship = child(old, "deploy", "ship")
    store.delete(kind("WorkflowRun"), "default", "wfr", context=OPERATOR)
    gc.collect_owner(old.uid)
    assert not deleting(make)  # the rerun's artifacts stay
    assert deleting(failed_ship)  # only the old run's go
    store.delete(kind("WorkflowRun"), "default", "again", context=OPERATOR)
    gc.collect_owner(new.uid)
    assert deleting(make)


def test_a_rerun_of_a_rerun_carries_the_first_runs_jobs_and_owns_their_runs_too(admin_api):
    old = failed_run()
    post(admin_api, rerun_body(failedJobsOnly=True))
    middle = settle(WorkflowRun.objects.get(name="again"))
    finish(child(middle, "deploy", "ship"), phase="Failed")
    middle = settle(middle)
    assert middle.phase == "Failed"
    assert post(admin_api, rerun_body("again", "third", failedJobsOnly=True)).status_code == 201
    third = settle(WorkflowRun.objects.get(name="third"))
    assert (
        third.status["jobs"]["build"]["message"] == "succeeded in WorkflowRun again; carried over"
    )
    make = child(old, "build", "make")
    assert {r["uid"] for r in make.owner_references} == {
        str(old.uid),
        str(middle.uid),
        str(third.uid),
    }
    assert child(third, "deploy", "ship").spec["source"]["inline"] == "ship 1.2 prod"


def test_failed_jobs_only_of_a_run_gone_before_it_started_fails_saying_so(admin_api):
    failed_run()
    post(admin_api, rerun_body(failedJobsOnly=True))
    WorkflowRun.objects.filter(name="wfr").delete()
    new = settle(WorkflowRun.objects.get(name="again"))
    assert new.phase == "Failed"
    assert "is gone" in new.status["message"]


def test_events_on_both_runs(admin_api, django_capture_on_commit_callbacks):
    failed_run()
    with django_capture_on_commit_callbacks(execute=True):
        post(admin_api, rerun_body(failedJobsOnly=True))
        settle(WorkflowRun.objects.get(name="again"))
    events = {
        (e.involved_name, e.reason): e.message
        for e in Event.objects.filter(reason__in=["Rerun", "RerunStarted", "JobSucceeded"])
    }
    assert events[("again", "RerunStarted")] == (
        "rerun of WorkflowRun wfr: its failed jobs (carried over: build)"
    )
    assert events[("wfr", "Rerun")] == "rerun as WorkflowRun again: its failed jobs"
    assert "carried over" in events[("again", "JobSucceeded")]
