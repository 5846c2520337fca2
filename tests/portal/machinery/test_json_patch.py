"""PATCH with application/json-patch+json (RFC 6902, kubectl patch --type=json) through the
same write path as a merge patch; the patch types kube-apiserver refuses for custom resources
are refused here the same way."""

from __future__ import annotations

import json

import pytest

from portal.auth.identities import register_controller
from portal.machinery import patches, store
from portal.machinery.registry import registry
from tests.helpers.api import assert_status, widget, widgets
from tests.helpers.rbac import bind_role, make_role

pytestmark = pytest.mark.django_db


def json_patch(client, url, operations):
    return client.patch(url, json.dumps(operations), content_type=patches.JSON_PATCH)


@pytest.fixture
def widget_a(admin_api):
    body = widget("a", 3, parts=[{"name": "p", "count": 1}], metadata={"labels": {"x": "1"}})
    assert admin_api.post(widgets(), body, format="json").status_code == 201
    return f"{widgets()}/a"


def test_add_replace_remove_and_test_ops(admin_api, widget_a):
    response = json_patch(
        admin_api,
        widget_a,
        [
            {"op": "test", "path": "/spec/size", "value": 3},
            {"op": "replace", "path": "/spec/size", "value": 5},
            {"op": "add", "path": "/spec/parts/-", "value": {"name": "q", "count": 2}},
            {"op": "add", "path": "/spec/note", "value": "hi"},
            {"op": "remove", "path": "/spec/parts/0"},
        ],
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["spec"] == {
        "size": 5,
        "color": "red",
        "parts": [{"name": "q", "count": 2}],
        "note": "hi",
    }
    assert body["metadata"]["generation"] == 2
    assert admin_api.get(widget_a).json() == body


def test_labels_are_patched(admin_api, widget_a):
    response = json_patch(
        admin_api,
        widget_a,
        [
            {"op": "add", "path": "/metadata/labels/tier", "value": "web"},
            {"op": "remove", "path": "/metadata/labels/x"},
        ],
    )
    assert response.status_code == 200, response.json()
    assert response.json()["metadata"]["labels"] == {"tier": "web"}


def test_a_failed_test_op_is_invalid_and_changes_nothing(admin_api, widget_a):
    response = json_patch(
        admin_api,
        widget_a,
        [
            {"op": "replace", "path": "/spec/size", "value": 9},
            {"op": "test", "path": "/spec/size", "value": 4},
        ],
    )
    body = assert_status(response, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "patch[1]"
    assert "patch operation 1 (test /spec/size)" in body["message"]
    assert admin_api.get(widget_a).json()["spec"]["size"] == 3


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "remove", "path": "/spec/missing"},
        {"op": "replace", "path": "/spec/parts/7/name", "value": "x"},
        {"op": "add", "path": "spec/size", "value": 1},  # not a JSON pointer
        {"op": "frobnicate", "path": "/spec/size"},
        {"op": "add", "value": 1},  # no path
        {"op": "add", "path": 7, "value": 1},
    ],
)
def test_an_op_that_does_not_apply_is_invalid_never_a_500(admin_api, widget_a, operation):
    body = assert_status(json_patch(admin_api, widget_a, [operation]), 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "patch[0]"


@pytest.mark.parametrize("body", [{"op": "add"}, ["add"], "x"])
def test_a_body_that_is_no_json_patch_is_a_bad_request(admin_api, widget_a, body):
    body = assert_status(json_patch(admin_api, widget_a, body), 400, "BadRequest")
    assert body["details"]["causes"][0]["field"] == "patch"


def test_the_patched_object_is_validated(admin_api, widget_a):
    response = json_patch(
        admin_api, widget_a, [{"op": "replace", "path": "/spec/size", "value": 99}]
    )
    body = assert_status(response, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "spec.size"


def test_immutable_fields_stay_immutable(admin_api, widget_a):
    response = json_patch(
        admin_api, widget_a, [{"op": "replace", "path": "/spec/color", "value": "blue"}]
    )
    body = assert_status(response, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "spec.color"


def test_a_changed_resource_version_is_a_precondition(admin_api, widget_a):
    response = json_patch(
        admin_api,
        widget_a,
        [
            {"op": "replace", "path": "/metadata/resourceVersion", "value": "999"},
            {"op": "replace", "path": "/spec/size", "value": 4},
        ],
    )
    assert_status(response, 409, "Conflict")


def test_status_is_not_written_through_the_main_resource(admin_api, widget_a):
    response = json_patch(
        admin_api, widget_a, [{"op": "add", "path": "/status/phase", "value": "Ready"}]
    )
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == {}


def test_status_subresource_for_a_controller_not_for_a_user(admin_api, user_api, widget_a):
    make_role(
        admin_api,
        "widget-editor",
        [
            {
                "apiGroups": ["testing.kruntimes.io"],
                "resources": ["widgets"],
                "verbs": ["get", "patch"],
            }
        ],
    )
    bind_role(admin_api, "alice-edits", "Role", "widget-editor")
    ready = [{"op": "add", "path": "/status/phase", "value": "Ready"}]
    assert_status(json_patch(user_api, f"{widget_a}/status", ready), 403, "Forbidden")

    controller = register_controller(
        "widget-status-test",
        [
            {
                "apiGroups": ["testing.kruntimes.io"],
                "resources": ["widgets/status"],
                "verbs": ["patch"],
            }
        ],
    )
    kind = registry.get("testing.kruntimes.io", "v1", "widgets")
    obj = store.patch(
        kind,
        "default",
        "a",
        ready,
        subresource="status",
        patch_type=patches.JSON_PATCH,
        context=store.WriteContext(user=controller),
    )
    assert obj.status == {"phase": "Ready"}
    # /status writes only status: a spec op there changes nothing
    spec_op = [{"op": "replace", "path": "/spec/size", "value": 7}]
    assert json_patch(admin_api, f"{widget_a}/status", spec_op).json()["spec"]["size"] == 3


def test_strategic_merge_patch_names_the_served_types(admin_api, widget_a):
    response = admin_api.patch(
        widget_a, '{"spec": {"size": 2}}', content_type=patches.STRATEGIC_MERGE_PATCH
    )
    body = assert_status(response, 415, "UnsupportedMediaType")
    assert patches.JSON_PATCH in body["message"] and patches.MERGE_PATCH in body["message"]


def test_a_merge_patch_still_merges(admin_api, widget_a):
    response = admin_api.patch(
        widget_a, json.dumps({"spec": {"size": 6}}), content_type=patches.MERGE_PATCH
    )
    assert response.json()["spec"]["size"] == 6
    assert response.json()["spec"]["parts"] == [{"name": "p", "count": 1}]
