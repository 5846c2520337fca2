"""WorkflowRun admission: the jobs rules of a Workflow (inputs = the keys of spec.inputs), the
frozen spec, one-way cancellation, the status shape, and freezing a Workflow at create."""

from __future__ import annotations

import pytest

from portal.machinery.errors import StatusError
from tests.helpers.runs import artifact_ref, merge_patch
from tests.helpers.workflows import (
    build_deploy_jobs,
    causes_of,
    create,
    job,
    started_run_manifest,
    step,
    url,
    workflow_manifest,
    workflow_run_manifest,
)
from workflows.models import WorkflowRun

pytestmark = pytest.mark.django_db


def post(api, manifest):
    return api.post(url("workflowruns"), manifest, format="json")


def test_an_inline_run_is_admitted(admin_api):
    response = post(admin_api, workflow_run_manifest(jobs=build_deploy_jobs()))
    assert response.status_code == 201, response.json()
    run = WorkflowRun.objects.get(name="wfr")
    assert (run.phase, run.workflow, run.cancel_requested) == ("Pending", "", False)


def test_jobs_are_required(admin_api):
    manifest = workflow_run_manifest()
    del manifest["spec"]["jobs"]
    assert "spec.jobs" in causes_of(post(admin_api, manifest))


def test_the_workflow_rules_apply_to_its_jobs(admin_api):
    jobs = {"a": job(needs=["b"]), "b": job(needs=["a"]), "c": job(needs=["c"])}
    found = causes_of(post(admin_api, workflow_run_manifest(jobs=jobs)))
    assert found["spec.jobs"] == "Invalid value: dependency cycle a -> b -> a"
    assert "spec.jobs.c.needs[0]" in found


def test_expressions_read_the_inputs_it_was_given(admin_api):
    jobs = {"build": job(step("s", "echo ${{ inputs.who }}"))}
    assert "spec.jobs.build.steps[0].run" in causes_of(
        post(admin_api, workflow_run_manifest(jobs=jobs))
    )
    manifest = workflow_run_manifest(jobs=jobs, inputs={"who": "me"})
    assert post(admin_api, manifest).status_code == 201


def test_inputs_are_strings(admin_api):
    manifest = workflow_run_manifest(inputs={"n": 3})
    assert "spec.inputs.n" in causes_of(post(admin_api, manifest))


def test_outputs_read_any_job(admin_api):
    manifest = workflow_run_manifest(outputs={"o": {"value": "${{ jobs.nope.outputs.v }}"}})
    assert "spec.outputs.o.value" in causes_of(post(admin_api, manifest))


@pytest.mark.parametrize(
    "field, value",
    [
        ("jobs", {"other": job()}),
        ("inputs", {"who": "you"}),
        ("outputs", {"o": {"value": "x"}}),
        ("workflowRef", {"name": "other"}),
    ],
)
def test_the_frozen_spec_is_immutable(admin_api, field, value):
    assert post(admin_api, workflow_run_manifest()).status_code == 201
    response = merge_patch(admin_api, url("workflowruns", name="wfr"), {"spec": {field: value}})
    assert causes_of(response) == {f"spec.{field}": "field is immutable"}


def test_cancel_requested_is_one_way(admin_api):
    assert post(admin_api, workflow_run_manifest()).status_code == 201
    target = url("workflowruns", name="wfr")
    assert merge_patch(admin_api, target, {"spec": {"cancelRequested": True}}).status_code == 200
    assert WorkflowRun.objects.get(name="wfr").cancel_requested
    for body in ({"cancelRequested": False}, {"cancelRequested": None}):
        assert "spec.cancelRequested" in causes_of(merge_patch(admin_api, target, {"spec": body}))


def status_patch(api, status):
    return merge_patch(api, url("workflowruns", name="wfr") + "/status", {"status": status})


def test_the_status_takes_the_controller_report(admin_api):
    assert post(admin_api, workflow_run_manifest(jobs=build_deploy_jobs())).status_code == 201
    status = {
        "phase": "Running",
        "message": "build is running",
        "jobs": {
            "build": {
                "phase": "Succeeded",
                "outputs": {"tests": "passed"},
                "artifacts": {"dist.tgz": artifact_ref("dist.tgz")},
                "steps": [
                    {"name": "test", "phase": "Succeeded", "runName": "wfr-build-test"},
                    {
                        "name": "package",
                        "phase": "Succeeded",
                        "actionSteps": [{"name": "tar", "phase": "Succeeded"}],
                    },
                ],
            },
            "deploy": {"phase": "Waiting"},
            "call": {"phase": "Running", "workflowRunName": "wfr-call"},
        },
        "conditions": [
            {
                "type": "Accepted",
                "status": "True",
                "reason": "Accepted",
                "message": "",
                "lastTransitionTime": "2025-01-02T03:04:05Z",
            }
        ],
    }
    response = status_patch(admin_api, status)
    assert response.status_code == 200, response.json()
    assert WorkflowRun.objects.get(name="wfr").phase == "Running"


@pytest.mark.parametrize(
    "status, field",
    [
        ({"phase": "Scheduled"}, "status.phase"),
        ({"jobs": {"build": {"phase": "Ready"}}}, "status.jobs.build.phase"),
        (
            {"jobs": {"build": {"phase": "Running", "steps": [{"name": "s", "phase": "Waiting"}]}}},
            "status.jobs.build.steps[0].phase",
        ),
        (
            {"jobs": {"build": {"phase": "Running", "artifacts": {"a": {"name": "a"}}}}},
            "status.jobs.build.artifacts.a.driver",
        ),
        ({"message": "x" * 4097}, "status.message"),
        ({"outputs": {f"o{n}": "v" for n in range(65)}}, "status.outputs"),
    ],
)
def test_a_bad_status_is_refused(admin_api, status, field):
    assert post(admin_api, workflow_run_manifest()).status_code == 201
    assert field in causes_of(status_patch(admin_api, status))


# --- freezing a Workflow at create --------------------------------------------------------


@pytest.fixture
def workflow():
    outputs = {"result": {"value": "${{ jobs.build.outputs.tests }}"}}
    inputs = {
        "who": {"required": True},
        "greeting": {"default": "hello"},
        "extra": {},
    }
    jobs = build_deploy_jobs()
    jobs["build"]["steps"][0]["run"] = "echo ${{ inputs.greeting }} ${{ inputs.extra }}"
    return create(workflow_manifest("ci", jobs=jobs, inputs=inputs, outputs=outputs))


def test_a_run_of_a_workflow_freezes_its_jobs_and_outputs(admin_api, workflow):
    response = post(admin_api, started_run_manifest(inputs={"who": "me"}))
    assert response.status_code == 201, response.json()
    spec = response.json()["spec"]
    assert spec["jobs"] == workflow.spec["jobs"]
    assert spec["outputs"] == workflow.spec["outputs"]
    assert spec["inputs"] == {"who": "me", "greeting": "hello", "extra": ""}
    assert WorkflowRun.objects.get(name="wfr").workflow == "ci"


def test_a_later_change_of_the_workflow_does_not_reach_the_run(admin_api, workflow):
    assert post(admin_api, started_run_manifest(inputs={"who": "me"})).status_code == 201
    patch = {"spec": {"jobs": {"build": {"runs-on": "python"}}}}
    assert merge_patch(admin_api, url("workflows", name="ci"), patch).status_code == 200
    assert WorkflowRun.objects.get(name="wfr").spec["jobs"]["build"]["runs-on"] == "bash"


def test_a_given_input_wins_over_the_default(admin_api, workflow):
    manifest = started_run_manifest(inputs={"who": "me", "greeting": "hi"})
    assert post(admin_api, manifest).json()["spec"]["inputs"]["greeting"] == "hi"


def test_a_required_input_must_be_given(admin_api, workflow):
    found = causes_of(post(admin_api, started_run_manifest()))
    assert list(found) == ["spec.inputs.who"]


def test_an_unknown_input_is_refused(admin_api, workflow):
    found = causes_of(post(admin_api, started_run_manifest(inputs={"who": "me", "typo": "x"})))
    assert list(found) == ["spec.inputs.typo"]


def test_a_missing_workflow_is_refused_on_the_ref(admin_api):
    response = post(admin_api, started_run_manifest("nope"))
    assert response.json()["details"]["causes"][0]["reason"] == "FieldValueNotFound"
    assert list(causes_of(response)) == ["spec.workflowRef.name"]


def test_a_workflow_of_another_namespace_is_not_found(admin_api, workflow):
    create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}, None)
    response = admin_api.post(
        url("workflowruns", "other"), started_run_manifest(inputs={"who": "me"}), format="json"
    )
    assert list(causes_of(response)) == ["spec.workflowRef.name"]


def test_a_run_with_jobs_and_a_ref_keeps_its_own_jobs(workflow):
    manifest = started_run_manifest(jobs={"solo": job()})
    assert create(manifest).spec["jobs"] == {"solo": job()}


def test_every_writer_freezes_the_same_way(workflow):
    """The store (what the CLI, the admin and controllers use), not only the REST view."""
    with pytest.raises(StatusError) as raised:
        create(started_run_manifest())
    assert [c.field for c in raised.value.causes] == ["spec.inputs.who"]
    assert create(started_run_manifest(inputs={"who": "me"})).spec["jobs"] == workflow.spec["jobs"]
