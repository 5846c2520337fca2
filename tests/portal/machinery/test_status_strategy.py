"""Status strategies: a status update through the API (an operator, a client granted
``<plural>/status``) is held to the lifecycle the kind's controllers keep. A finished Run,
Job or WorkflowRun is not started again; a Released workspace stays Released, a Lost one is
never rebound, and a bound one never moves to another pod."""

from __future__ import annotations

import json

import pytest

from jobclasses.models import Job
from portal.machinery.registry import registry
from portal.machinery.status_strategy import StatusStrategy, final_phases, set_once
from scheduling.models import Run
from tests.helpers.runs import INV, causes, merge_patch, run_manifest, runs_url
from tests.helpers.workflows import url, workflow_run_manifest
from workflows.models import WorkflowRun
from workspaces.models import PersistentWorkspace

pytestmark = pytest.mark.django_db

RULES = StatusStrategy(
    rules=(
        final_phases("Thing", "Done", then={"Lost": ("Done",)}),
        set_once("boundPod"),
    )
)


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ({}, {"phase": "Running"}, {}),
        ({"phase": "Running"}, {"phase": "Done"}, {}),
        ({"phase": "Done"}, {"phase": "Done", "message": "m"}, {}),
        ({"phase": "Done"}, {"phase": "Running"}, {"status.phase": INV}),
        ({"phase": "Lost"}, {"phase": "Running"}, {"status.phase": INV}),
        ({"phase": "Lost"}, {"phase": "Done"}, {}),
        ({"boundPod": ""}, {"boundPod": "a"}, {}),
        ({"boundPod": "a"}, {"boundPod": "a"}, {}),
        ({"boundPod": "a"}, {"boundPod": "b"}, {"status.boundPod": INV}),
        ({"boundPod": "a"}, {}, {"status.boundPod": INV}),
    ],
)
def test_the_rules(old, new, expected):
    assert {c.field: c.reason for c in RULES.validate_update(new, old)} == expected


def test_the_messages_say_what_and_why():
    (cause,) = RULES.validate_update({"phase": "Running"}, {"phase": "Done"})
    assert cause.message == 'Invalid value: "Running": may not change once the Thing is Done'
    (cause,) = RULES.validate_update({"phase": "Running"}, {"phase": "Lost"})
    assert cause.message == 'Invalid value: "Running": a Lost Thing may only become Done'


def test_every_kind_with_a_status_subresource_declares_its_strategy():
    for plural in ("runs", "workflowruns", "jobs", "persistentworkspaces"):
        kind = registry.lookup(plural)
        assert kind.status is not None and kind.status.rules, plural


def status_of(response):
    assert response.status_code == 200, response.json()
    return response.json()["status"]


def test_a_finished_run_is_not_started_again_by_a_status_write(admin_api):
    assert (
        admin_api.post(
            runs_url(), json.dumps(run_manifest()), content_type="application/json"
        ).status_code
        == 201
    )
    target = f"{runs_url()}/r/status"
    assert status_of(merge_patch(admin_api, target, {"status": {"phase": "Succeeded"}}))
    assert status_of(merge_patch(admin_api, target, {"status": {"message": "kept"}}))
    response = merge_patch(admin_api, target, {"status": {"phase": "Pending"}})
    assert causes(response) == {"status.phase": INV}
    assert "may not change once the Run is Succeeded" in response.json()["message"]
    assert Run.objects.get(name="r").phase == "Succeeded"


def test_a_finished_workflow_run_is_not_started_again(admin_api):
    created = admin_api.post(
        url("workflowruns"), json.dumps(workflow_run_manifest()), content_type="application/json"
    )
    assert created.status_code == 201, created.json()
    WorkflowRun.objects.filter(name="wfr").update(status={"phase": "Failed"}, phase="Failed")
    response = merge_patch(
        admin_api, url("workflowruns", name="wfr") + "/status", {"status": {"phase": "Running"}}
    )
    assert causes(response) == {"status.phase": INV}


def test_a_finished_job_is_not_started_again(admin_api):
    from tests.helpers.jobclasses import create, job_manifest, set_namespace

    set_namespace("default")
    create(job_manifest("j"), namespace="default")
    Job.objects.filter(name="j").update(status={"phase": "Succeeded"}, phase="Succeeded")
    target = "/apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/default/jobs/j/status"
    response = merge_patch(admin_api, target, {"status": {"phase": "Running"}})
    assert causes(response) == {"status.phase": INV}


WORKSPACES = "/apis/kruntimes.io/v1alpha1/namespaces/default/persistentworkspaces"


@pytest.fixture
def workspace(admin_api):
    from tests.helpers.workspaces import workspace_manifest

    created = admin_api.post(
        WORKSPACES, json.dumps(workspace_manifest()), content_type="application/json"
    )
    assert created.status_code == 201, created.json()
    return f"{WORKSPACES}/{created.json()['metadata']['name']}/status"


def test_a_bound_workspace_stays_on_its_pod(admin_api, workspace):
    bound = {"phase": "Bound", "boundPod": "bash-a", "boundPodUID": "u1", "path": "/p"}
    assert status_of(merge_patch(admin_api, workspace, {"status": bound}))
    response = merge_patch(
        admin_api, workspace, {"status": {"boundPod": "bash-b", "boundPodUID": "u2"}}
    )
    assert causes(response) == {"status.boundPod": INV, "status.boundPodUID": INV}


def test_a_lost_workspace_is_never_rebound_and_released_is_final(admin_api, workspace):
    lost = {"phase": "Lost", "boundPod": "bash-a", "boundPodUID": "u1", "path": "/p"}
    assert status_of(merge_patch(admin_api, workspace, {"status": lost}))
    assert causes(merge_patch(admin_api, workspace, {"status": {"phase": "Bound"}})) == {
        "status.phase": INV
    }
    assert status_of(merge_patch(admin_api, workspace, {"status": {"phase": "Released"}}))
    assert causes(merge_patch(admin_api, workspace, {"status": {"phase": "Pending"}})) == {
        "status.phase": INV
    }
    assert PersistentWorkspace.objects.get().phase == "Released"
