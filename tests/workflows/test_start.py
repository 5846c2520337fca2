"""Starting a Workflow: ``POST workflows/<name>/run`` (201 with the WorkflowRun, authorized as
``create`` on workflowruns), its Status errors, and the kinds in discovery and the CLI."""

from __future__ import annotations

import pytest
import yaml

from portal.machinery.registry import registry
from tests.helpers.workflows import causes_of, create, run_url, workflow_manifest
from tests.helpers.workspace_access import bind_role, make_role
from workflows.models import WorkflowRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def workflow():
    return create(workflow_manifest("ci", inputs={"who": {"required": True}}))


def start(api, body=None, workflow="ci", namespace="default"):
    return api.post(run_url(workflow, namespace), body if body is not None else {}, format="json")


def test_a_start_is_a_201_with_a_generated_run(admin_api, workflow):
    response = start(admin_api, {"inputs": {"who": "me"}})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["kind"] == "WorkflowRun"
    assert body["metadata"]["name"].startswith("ci-") and len(body["metadata"]["name"]) == 8
    assert body["spec"]["workflowRef"] == {"name": "ci"}
    assert body["spec"]["jobs"] == workflow.spec["jobs"]
    assert WorkflowRun.objects.get(name=body["metadata"]["name"]).workflow == "ci"


def test_a_start_takes_a_name_or_a_generate_name(admin_api, workflow):
    named = start(admin_api, {"inputs": {"who": "me"}, "metadata": {"name": "first"}})
    assert named.json()["metadata"]["name"] == "first"
    prefixed = start(admin_api, {"inputs": {"who": "me"}, "metadata": {"generateName": "n-"}})
    assert prefixed.json()["metadata"]["name"].startswith("n-")


def test_a_dry_run_creates_nothing(admin_api, workflow):
    response = admin_api.post(
        run_url("ci") + "?dryRun=All", {"inputs": {"who": "me"}}, format="json"
    )
    assert response.status_code == 201
    assert not WorkflowRun.objects.exists()


def test_a_missing_workflow_is_a_404(admin_api):
    response = start(admin_api, {"inputs": {}}, workflow="nope")
    assert response.status_code == 404
    assert response.json()["reason"] == "NotFound"


def test_a_missing_required_input_is_a_422(admin_api, workflow):
    assert list(causes_of(start(admin_api))) == ["spec.inputs.who"]


def test_an_unknown_input_is_a_422(admin_api, workflow):
    found = causes_of(start(admin_api, {"inputs": {"who": "me", "nope": "x"}}))
    assert list(found) == ["spec.inputs.nope"]


def test_a_non_string_input_is_a_422(admin_api, workflow):
    assert "spec.inputs.who" in causes_of(start(admin_api, {"inputs": {"who": 1}}))


def test_a_bad_name_is_a_422(admin_api, workflow):
    found = causes_of(start(admin_api, {"inputs": {"who": "me"}, "metadata": {"name": "No!"}}))
    assert "metadata.name" in found


def test_an_existing_name_is_a_409(admin_api, workflow):
    body = {"inputs": {"who": "me"}, "metadata": {"name": "first"}}
    assert start(admin_api, body).status_code == 201
    assert start(admin_api, body).json()["reason"] == "AlreadyExists"


@pytest.mark.parametrize("body", [[1], {"spec": {}}, {"inputs": {}, "jobs": {}}])
def test_a_body_of_another_shape_is_a_400(admin_api, workflow, body):
    response = start(admin_api, body)
    assert response.status_code == 400
    assert response.json()["kind"] == "Status"


def test_a_user_without_create_on_workflowruns_is_a_403(user_api, workflow):
    make_role(
        "reader", [{"apiGroups": ["kruntimes.io"], "resources": ["*"], "verbs": ["get", "list"]}]
    )
    bind_role("reader", "reader")
    response = start(user_api, {"inputs": {"who": "me"}})
    assert response.status_code == 403
    assert 'cannot create resource "workflowruns"' in response.json()["message"]
    assert not WorkflowRun.objects.exists()


def test_create_on_workflowruns_is_enough(user_api, workflow):
    rule = {"apiGroups": ["kruntimes.io"], "resources": ["workflowruns"], "verbs": ["create"]}
    make_role("starter", [rule])
    bind_role("starter", "starter")
    response = start(user_api, {"inputs": {"who": "me"}})
    assert response.status_code == 201, response.json()


def test_only_post_is_served(admin_api, workflow):
    assert admin_api.get(run_url("ci")).status_code == 405


def test_discovery_lists_the_kinds_and_the_run_subresource(admin_api):
    resources = {
        r["name"]: r for r in admin_api.get("/apis/kruntimes.io/v1alpha1").json()["resources"]
    }
    assert resources["workflows"]["shortNames"] == ["wf"]
    assert resources["workflowruns"]["shortNames"] == ["wfr"]
    assert resources["actions"]["kind"] == "Action"
    assert resources["workflows/run"]["verbs"] == ["create"]
    assert "workflowruns/status" in resources


def test_the_cli_resolves_the_short_names():
    assert registry.lookup("wf").kind == "Workflow"
    assert registry.lookup("wfr").kind == "WorkflowRun"
    assert registry.lookup("actions").kind == "Action"


def test_get_prints_phase_and_workflow_columns(admin_api, workflow):
    from portal.cli import table_rows

    assert (
        start(admin_api, {"inputs": {"who": "me"}, "metadata": {"name": "r1"}}).status_code == 201
    )
    kind = registry.lookup("wfr")
    rows = table_rows(kind, list(WorkflowRun.objects.all()))
    assert rows[0] == ["NAME", "PHASE", "WORKFLOW", "AGE"]
    assert rows[1][:3] == ["r1", "Pending", "ci"]


def test_the_openapi_schema_has_the_run_endpoint(admin_api):
    paths = yaml.safe_load(admin_api.get("/api/schema/").content)["paths"]
    assert (
        "post" in paths["/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/workflows/{name}/run"]
    )
