"""Server-side apply (PATCH application/apply-patch+yaml) and the managedFields every write
keeps, through the API, on the test Widget kind."""

from __future__ import annotations

import json

import pytest
import yaml

from portal.machinery import patches
from tests.helpers.api import API_VERSION, assert_status, merge_patch, widget, widgets
from tests.helpers.rbac import bind_role, make_role

pytestmark = pytest.mark.django_db


def apply(client, name, body, manager="mgr", **params):
    query = "&".join(f"{k}={v}" for k, v in {"fieldManager": manager, **params}.items() if v)
    return client.patch(
        f"{widgets()}/{name}?{query}", yaml.safe_dump(body), content_type=patches.APPLY_PATCH
    )


def entries(body):
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e
        for e in body["metadata"]["managedFields"]
    }


def config(name="a", **spec):
    return {"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_apply_creates_and_owns_what_it_applied(admin_api):
    response = apply(admin_api, "a", config(size=2, note="n"))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["spec"]["size"] == 2
    entry = entries(body)[("mgr", "Apply", "")]
    assert entry["apiVersion"] == API_VERSION and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {"f:spec": {"f:size": {}, "f:note": {}}}
    again = apply(admin_api, "a", config(size=2, note="n"))
    assert again.status_code == 200


def test_apply_body_may_be_json(admin_api):
    response = admin_api.patch(
        f"{widgets()}/a?fieldManager=m",
        json.dumps(config(size=1)),
        content_type=patches.APPLY_PATCH,
    )
    assert response.status_code == 201, response.json()


def test_a_field_no_longer_applied_is_removed(admin_api):
    apply(admin_api, "a", config(size=2, note="n"))
    body = apply(admin_api, "a", config(size=2)).json()
    assert "note" not in body["spec"]
    assert entries(body)[("mgr", "Apply", "")]["fieldsV1"] == {"f:spec": {"f:size": {}}}


def test_a_field_another_manager_also_applied_is_kept(admin_api):
    apply(admin_api, "a", config(size=2, note="n"))
    apply(admin_api, "a", config(note="n"), manager="other")
    body = apply(admin_api, "a", config(size=2)).json()
    assert body["spec"]["note"] == "n"


def test_conflict_with_another_manager_is_a_409_naming_it(admin_api):
    apply(admin_api, "a", config(size=2))
    response = apply(admin_api, "a", config(size=3), manager="other")
    body = assert_status(response, 409, "Conflict")
    assert body["message"] == (
        f'Apply failed with 1 conflict: conflict with "mgr" using {API_VERSION}: .spec.size'
    )
    assert body["details"]["causes"] == [
        {
            "field": ".spec.size",
            "reason": "FieldManagerConflict",
            "message": f'conflict with "mgr" using {API_VERSION}',
        }
    ]


def test_same_value_is_shared_ownership_not_a_conflict(admin_api):
    apply(admin_api, "a", config(size=2))
    response = apply(admin_api, "a", config(size=2), manager="other")
    assert response.status_code == 200
    assert {("mgr", "Apply", ""), ("other", "Apply", "")} <= set(entries(response.json()))


def test_force_takes_ownership(admin_api):
    apply(admin_api, "a", config(size=2, note="n"))
    response = apply(admin_api, "a", config(size=3), manager="other", force="true")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["spec"]["size"] == 3
    assert entries(body)[("mgr", "Apply", "")]["fieldsV1"] == {"f:spec": {"f:note": {}}}


def test_update_entries_from_create_put_and_patch(admin_api):
    response = admin_api.post(
        f"{widgets()}?fieldManager=creator", widget("a", 1, note="x"), format="json"
    )
    assert entries(response.json())[("creator", "Update", "")]["fieldsV1"]["f:spec"] == {
        "f:size": {},
        "f:color": {},
        "f:note": {},
    }
    response = merge_patch(admin_api, f"{widgets()}/a", {"spec": {"size": 4}})
    # no fieldManager: the User-Agent's name (the test client sends none: "unknown")
    found = entries(response.json())
    assert found[("unknown", "Update", "")]["fieldsV1"] == {"f:spec": {"f:size": {}}}
    assert "f:size" not in found[("creator", "Update", "")]["fieldsV1"]["f:spec"]
    current = response.json()
    current["spec"]["note"] = "y"
    response = admin_api.put(f"{widgets()}/a?fieldManager=replacer", current, format="json")
    assert response.status_code == 200, response.json()
    found = entries(response.json())
    assert found[("replacer", "Update", "")]["fieldsV1"] == {"f:spec": {"f:note": {}}}
    assert found[("creator", "Update", "")]["fieldsV1"]["f:spec"] == {"f:color": {}}


def test_user_agent_names_the_manager(admin_api):
    admin_api.post(widgets(), widget("a", 1), format="json")
    response = admin_api.patch(
        f"{widgets()}/a",
        json.dumps({"spec": {"size": 5}}),
        content_type=patches.MERGE_PATCH,
        HTTP_USER_AGENT="my-tool/1.0 (linux)",
    )
    assert ("my-tool", "Update", "") in entries(response.json())


def test_an_update_takes_fields_from_the_applier_without_conflict(admin_api):
    apply(admin_api, "a", config(size=2))
    response = admin_api.patch(
        f"{widgets()}/a?fieldManager=editor",
        json.dumps({"spec": {"size": 5}}),
        content_type=patches.MERGE_PATCH,
    )
    assert response.status_code == 200
    assert ("mgr", "Apply", "") not in entries(response.json())
    conflict = apply(admin_api, "a", config(size=2))
    assert '"editor" using' in assert_status(conflict, 409, "Conflict")["message"]


def test_apply_needs_a_field_manager(admin_api):
    response = admin_api.patch(
        f"{widgets()}/a", yaml.safe_dump(config(size=1)), content_type=patches.APPLY_PATCH
    )
    body = assert_status(response, 422, "Invalid")
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )


def test_force_on_a_merge_patch_is_refused(admin_api):
    admin_api.post(widgets(), widget("a", 1), format="json")
    response = admin_api.patch(
        f"{widgets()}/a?force=true",
        json.dumps({"spec": {"size": 2}}),
        content_type=patches.MERGE_PATCH,
    )
    body = assert_status(response, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "force"


@pytest.mark.parametrize("manager", ["x" * 129, "bad%0Aname"])
def test_field_manager_is_validated(admin_api, manager):
    response = admin_api.post(f"{widgets()}?fieldManager={manager}", widget("a", 1), format="json")
    body = assert_status(response, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "fieldManager"


def test_garbage_managed_fields_are_ignored_and_reset_clears(admin_api):
    admin_api.post(f"{widgets()}?fieldManager=c", widget("a", 1), format="json")
    garbage = {"metadata": {"managedFields": [{"manager": "x", "operation": "Nope"}]}}
    response = merge_patch(admin_api, f"{widgets()}/a?fieldManager=c", garbage)
    assert response.status_code == 200
    assert set(entries(response.json())) == {("c", "Update", "")}
    reset = merge_patch(admin_api, f"{widgets()}/a", {"metadata": {"managedFields": [{}]}})
    assert "managedFields" not in reset.json()["metadata"]


def test_applied_config_may_not_carry_managed_fields(admin_api):
    body = config(size=1)
    body["metadata"]["managedFields"] = [{}]
    assert_status(apply(admin_api, "a", body), 400, "BadRequest")


def test_dry_run_apply_stores_nothing(admin_api):
    response = apply(admin_api, "a", config(size=1), dryRun="All")
    assert response.status_code == 201
    assert_status(admin_api.get(f"{widgets()}/a"), 404, "NotFound")
    apply(admin_api, "a", config(size=1))
    response = apply(admin_api, "a", config(size=3), dryRun="All")
    assert response.json()["spec"]["size"] == 3
    assert admin_api.get(f"{widgets()}/a").json()["spec"]["size"] == 1


def test_status_subresource_apply_and_update_entries(admin_api):
    apply(admin_api, "a", config(size=1))
    status = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "a"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    response = admin_api.patch(
        f"{widgets()}/a/status?fieldManager=ctl",
        yaml.safe_dump(status),
        content_type=patches.APPLY_PATCH,
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"]["conditions"][0]["type"] == "Ready"
    entry = entries(body)[("ctl", "Apply", "status")]
    assert 'k:{"type":"Ready"}' in entry["fieldsV1"]["f:status"]["f:conditions"]
    response = merge_patch(
        admin_api, f"{widgets()}/a/status?fieldManager=writer", {"status": {"phase": "Ready"}}
    )
    assert ("writer", "Update", "status") in entries(response.json())


def test_apply_of_an_absent_object_needs_create(admin_api, user_api):
    rules = [{"apiGroups": ["testing.kruntimes.io"], "resources": ["widgets"], "verbs": ["patch"]}]
    make_role(admin_api, "patcher", rules)
    bind_role(admin_api, "alice-patches", "Role", "patcher")
    assert_status(apply(user_api, "a", config(size=1)), 403, "Forbidden")
    apply(admin_api, "a", config(size=1))
    assert apply(user_api, "a", config(size=2)).status_code == 200


def test_managed_fields_that_are_no_list_are_refused(admin_api):
    admin_api.post(widgets(), widget("a", 1), format="json")
    response = merge_patch(admin_api, f"{widgets()}/a", {"metadata": {"managedFields": "x"}})
    body = assert_status(response, 422, "Invalid")
    assert "metadata.managedFields" in {c["field"] for c in body["details"]["causes"]}


def test_an_applied_resource_version_is_a_precondition(admin_api):
    created = apply(admin_api, "a", config(size=1)).json()
    stale = config(size=2)
    stale["metadata"]["resourceVersion"] = "1"
    assert created["metadata"]["resourceVersion"] != "1"
    assert_status(apply(admin_api, "a", stale), 409, "Conflict")
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    assert apply(admin_api, "a", stale).json()["spec"]["size"] == 2
