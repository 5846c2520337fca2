"""Who may claim an object for a controller (OwnerReferencesPermissionEnforcement): changing
ownerReferences needs ``delete`` on the object; a controller or blockOwnerDeletion reference, or a
controller's identifying label, needs ``update`` on the owner's finalizers."""

from __future__ import annotations

import json

import pytest

from portal.machinery import owner_admission, store
from portal.machinery.registry import registry
from scheduling.admin.run_page import retry_manifest
from scheduling.models import Run
from tests.helpers.api import token_client
from tests.helpers.operator import OPERATOR
from tests.helpers.records import make_runtime
from tests.helpers.runs import run_manifest, runs_url
from tests.helpers.workspace_access import bind_role, make_role, make_workflow_run

pytestmark = pytest.mark.django_db

GROUP = "kruntimes.io"
UID_LABEL = "kruntimes.io/workflowrun-uid"
JOB_LABEL = "kruntimes.io/workflow-job"
STEP_LABEL = "kruntimes.io/workflow-step"
CREATE_RUNS = {"apiGroups": [GROUP], "resources": ["runs"], "verbs": ["create", "get"]}
EDIT_RUNS = {
    "apiGroups": [GROUP],
    "resources": ["runs"],
    "verbs": ["create", "get", "list", "patch", "update", "delete"],
}
FINALIZE_WFRS = {
    "apiGroups": [GROUP],
    "resources": ["workflowruns/finalizers"],
    "verbs": ["update"],
}


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


@pytest.fixture
def wfr():
    return make_workflow_run("victim")


def client_with(django_user_model, *rules):
    user = django_user_model.objects.create_user("mallory", "m@example.com", "pw")
    make_role("mallory", list(rules))
    bind_role("mallory", "mallory", user="mallory")
    return token_client(user)


def ref(wfr, **flags) -> dict:
    return {"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun", "name": wfr.name,
            "uid": str(wfr.uid), **flags}  # fmt: skip


def labels(wfr) -> dict:
    return {UID_LABEL: str(wfr.uid), JOB_LABEL: "build", STEP_LABEL: "s"}


def refused_field(response) -> str:
    body = response.json()
    assert response.status_code == 403, body
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)
    (cause,) = body["details"]["causes"]
    assert cause["reason"] == "FieldValueForbidden"
    return cause["field"]


def post(client, name, metadata):
    return client.post(runs_url(), run_manifest(name, metadata), format="json")


def test_the_workflow_labels_are_registered_by_their_app():
    assert {UID_LABEL, JOB_LABEL, STEP_LABEL} <= owner_admission.controller_labels()


def test_a_user_who_may_only_create_runs_cannot_give_one_an_owner(django_user_model, wfr):
    api = client_with(django_user_model, CREATE_RUNS)
    forged = {"labels": labels(wfr), "ownerReferences": [ref(wfr, controller=True)]}
    assert refused_field(post(api, "victim-build-s", forged)) == "metadata.ownerReferences"
    plain = {"ownerReferences": [ref(wfr)]}  # not even one that claims nothing
    assert refused_field(post(api, "r1", plain)) == "metadata.ownerReferences"
    assert not Run.objects.exists()


def test_a_controllers_labels_alone_are_refused(django_user_model, wfr):
    api = client_with(django_user_model, CREATE_RUNS)
    assert refused_field(post(api, "victim-build-s", {"labels": labels(wfr)})) == "metadata.labels"
    for key, value in labels(wfr).items():  # each one of them
        assert refused_field(post(api, "r", {"labels": {key: value}})) == "metadata.labels"
    assert post(api, "mine", {"labels": {"team": "a"}}).status_code == 201


def test_a_plain_owner_reference_needs_only_delete_on_the_object(django_user_model, wfr):
    api = client_with(django_user_model, EDIT_RUNS)
    assert post(api, "r1", {"ownerReferences": [ref(wfr)]}).status_code == 201


def test_a_privileged_user_needs_the_owners_finalizers_for_a_controller_reference(
    django_user_model, wfr
):
    api = client_with(django_user_model, EDIT_RUNS)
    controller = {"ownerReferences": [ref(wfr, controller=True)]}
    assert refused_field(post(api, "r1", controller)) == "metadata.ownerReferences"
    blocking = {"ownerReferences": [ref(wfr, blockOwnerDeletion=True)]}
    assert refused_field(post(api, "r2", blocking)) == "metadata.ownerReferences"
    assert refused_field(post(api, "r3", {"labels": labels(wfr)})) == "metadata.labels"
    make_role("finalize", [FINALIZE_WFRS])
    bind_role("finalize", "finalize", user="mallory")
    assert post(api, "r1", controller).status_code == 201
    assert post(api, "r2", blocking).status_code == 201
    assert post(api, "r3", {"labels": labels(wfr)}).status_code == 201


def test_updates_that_change_ownership_are_refused_and_others_pass(django_user_model, wfr):
    runs = registry.for_model(Run)
    store.create(
        runs,
        run_manifest("child", {"labels": labels(wfr), "ownerReferences": [ref(wfr, controller=True)]}),
        namespace="default",
        context=OPERATOR,
    )  # fmt: skip
    store.create(runs, run_manifest("plain"), namespace="default", context=OPERATOR)
    api = client_with(django_user_model, EDIT_RUNS)

    def patch(name, body):
        return api.patch(f"{runs_url()}/{name}", json.dumps(body),
                         content_type="application/merge-patch+json")  # fmt: skip

    steal = {"metadata": {"ownerReferences": [ref(wfr, controller=True)]}}
    assert refused_field(patch("plain", steal)) == "metadata.ownerReferences"
    relabel = {"metadata": {"labels": {JOB_LABEL: "deploy"}}}
    assert refused_field(patch("child", relabel)) == "metadata.labels"
    unlabel = {"metadata": {"labels": {UID_LABEL: None}}}
    assert refused_field(patch("child", unlabel)) == "metadata.labels"
    # what leaves the ownership as it was is the user's to change
    assert patch("child", {"metadata": {"labels": {"team": "a"}}}).status_code == 200
    assert patch("child", {"spec": {"cancelRequested": True}}).status_code == 200
    assert Run.objects.get(name="child").labels[JOB_LABEL] == "build"


def test_a_retried_run_is_the_users_own_without_the_controllers_labels(wfr):
    run = Run(name="victim-build-s", namespace="default",
              labels={**labels(wfr), "team": "a"}, spec=run_manifest()["spec"])  # fmt: skip
    run.owner_references = [ref(wfr, controller=True)]
    manifest = retry_manifest(run)
    assert manifest["metadata"]["labels"] == {
        "team": "a",
        "kruntimes.io/retry-of": "victim-build-s",
    }
    assert "ownerReferences" not in manifest["metadata"]
