"""The Kubernetes REST conventions over HTTP: create/get/list/put/patch, resourceVersion,
generation, /status, YAML, pagination and selectors."""

from __future__ import annotations

import pytest
import yaml

from portal.machinery import history
from tests.helpers.api import (
    API_VERSION,
    assert_status,
    causes,
    gadgets,
    merge_patch,
    widget,
    widgets,
)
from tests.helpers.operator import OPERATOR

pytestmark = pytest.mark.django_db


def test_create_then_get_returns_server_set_metadata(admin_api):
    created = admin_api.post(widgets(), widget("a", 3), format="json")
    assert created.status_code == 201
    body = created.json()
    meta = body["metadata"]
    assert (meta["name"], meta["namespace"], meta["generation"]) == ("a", "default", 1)
    # the cluster's resourceVersion: the newest of every kind's writes so far
    assert int(meta["resourceVersion"]) == history.current()
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert body["spec"] == {"size": 3, "color": "red"}  # defaulted
    assert body["status"] == {}
    assert admin_api.get(f"{widgets()}/a").json() == body


def test_create_ignores_client_set_server_fields_and_status(admin_api):
    manifest = widget("a", metadata={"uid": "x", "resourceVersion": "99", "generation": 7})
    manifest["status"] = {"phase": "Ready"}
    body = admin_api.post(widgets(), manifest, format="json").json()
    assert body["metadata"]["uid"] != "x"
    assert body["metadata"]["resourceVersion"] == str(history.current())
    assert body["metadata"]["generation"] == 1
    assert body["status"] == {}


def test_create_twice_is_already_exists(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = admin_api.post(widgets(), widget("a"), format="json")
    body = assert_status(response, 409, "AlreadyExists")
    assert body["details"] == {"name": "a", "group": "testing.kruntimes.io", "kind": "widgets"}


def test_generate_name(admin_api):
    manifest = widget("")
    manifest["metadata"] = {"generateName": "build-"}
    body = admin_api.post(widgets(), manifest, format="json").json()
    assert body["metadata"]["name"].startswith("build-")
    assert len(body["metadata"]["name"]) == len("build-") + 5


def test_get_missing_is_not_found(admin_api):
    body = assert_status(admin_api.get(f"{widgets()}/nope"), 404, "NotFound")
    assert body["message"] == 'widgets.testing.kruntimes.io "nope" not found'


def test_list_shape_and_namespace_scope(admin_api):
    admin_api.post("/api/v1/namespaces", {"metadata": {"name": "other"}}, format="json")
    admin_api.post(widgets(), widget("a"), format="json")
    admin_api.post(widgets("other"), widget("b"), format="json")
    listed = admin_api.get(widgets()).json()
    assert listed["kind"] == "WidgetList" and listed["apiVersion"] == API_VERSION
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    everywhere = admin_api.get(f"/apis/{API_VERSION}/widgets").json()
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]] == [
        ("default", "a"),
        ("other", "b"),
    ]


def test_put_bumps_resource_version_and_generation_only_on_spec_change(admin_api):
    created = admin_api.post(widgets(), widget("a", 1), format="json").json()
    created["metadata"]["labels"] = {"team": "x"}
    relabelled = admin_api.put(f"{widgets()}/a", created, format="json").json()
    versions = [int(created["metadata"]["resourceVersion"])]
    versions.append(int(relabelled["metadata"]["resourceVersion"]))
    assert relabelled["metadata"]["generation"] == 1
    relabelled["spec"]["size"] = 2
    resized = admin_api.put(f"{widgets()}/a", relabelled, format="json").json()
    versions.append(int(resized["metadata"]["resourceVersion"]))
    assert versions == sorted(set(versions))  # every write a newer version
    assert resized["metadata"]["generation"] == 2


def test_put_with_stale_resource_version_is_conflict_and_writes_nothing(admin_api):
    created = admin_api.post(widgets(), widget("a", 1), format="json").json()
    fresh = dict(created, spec={"size": 2})
    assert admin_api.put(f"{widgets()}/a", fresh, format="json").status_code == 200
    stale = dict(created, spec={"size": 9})  # still carries resourceVersion "1"
    body = assert_status(admin_api.put(f"{widgets()}/a", stale, format="json"), 409, "Conflict")
    assert "the object has been modified" in body["message"]
    assert admin_api.get(f"{widgets()}/a").json()["spec"]["size"] == 2


def test_put_without_resource_version_is_unconditional(admin_api):
    admin_api.post(widgets(), widget("a", 1), format="json")
    response = admin_api.put(f"{widgets()}/a", widget("a", 4), format="json")
    assert response.status_code == 200 and response.json()["spec"]["size"] == 4


def test_merge_patch_merges_and_null_deletes(admin_api):
    admin_api.post(
        widgets(),
        widget("a", 1, note="hello", metadata={"labels": {"a": "1", "b": "2"}}),
        format="json",
    )
    patched = merge_patch(
        admin_api,
        f"{widgets()}/a",
        {"metadata": {"labels": {"b": None, "c": "3"}}, "spec": {"note": None}},
    )
    body = patched.json()
    assert patched.status_code == 200
    assert body["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert body["spec"] == {"size": 1, "color": "red"}


def test_merge_patch_with_stale_resource_version_is_conflict(admin_api):
    admin_api.post(widgets(), widget("a", 1), format="json")
    merge_patch(admin_api, f"{widgets()}/a", {"spec": {"size": 2}})
    response = merge_patch(
        admin_api, f"{widgets()}/a", {"metadata": {"resourceVersion": "1"}, "spec": {"size": 3}}
    )
    assert_status(response, 409, "Conflict")


def test_strategic_merge_patch_is_unsupported(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = admin_api.patch(
        f"{widgets()}/a",
        '{"spec": {"size": 2}}',
        content_type="application/strategic-merge-patch+json",
    )
    assert_status(response, 415, "UnsupportedMediaType")


def test_a_body_without_content_type_is_read_as_json_as_kube_apiserver_does(admin_api):
    # the official Python client (37.x) sends custom-object creates without a Content-Type
    import json

    response = admin_api.generic("POST", widgets(), json.dumps(widget("a")), content_type="")
    assert response.status_code == 201, response.json()
    assert response.json()["metadata"]["name"] == "a"
    # a named media type it does not read is still refused
    response = admin_api.generic("POST", widgets(), "name: b", content_type="text/plain")
    assert_status(response, 415, "UnsupportedMediaType")


def test_main_resource_never_writes_status(admin_api):
    created = admin_api.post(widgets(), widget("a"), format="json").json()
    created["status"] = {"phase": "Ready"}
    assert admin_api.put(f"{widgets()}/a", created, format="json").json()["status"] == {}
    patched = merge_patch(admin_api, f"{widgets()}/a", {"status": {"phase": "Ready"}})
    assert patched.json()["status"] == {}


def test_status_subresource_writes_only_status_and_keeps_generation(admin_api):
    created = admin_api.post(widgets(), widget("a", 1), format="json").json()
    created["status"] = {"phase": "Ready"}
    created["spec"] = {"size": 9}
    body = admin_api.put(f"{widgets()}/a/status", created, format="json").json()
    assert body["status"] == {"phase": "Ready"}
    assert body["spec"]["size"] == 1
    assert body["metadata"]["generation"] == 1
    assert int(body["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    patched = merge_patch(admin_api, f"{widgets()}/a/status", {"status": {"phase": "Pending"}})
    assert patched.json()["status"]["phase"] == "Pending"
    assert admin_api.get(f"{widgets()}/a/status").json()["status"]["phase"] == "Pending"


def test_status_is_validated(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = merge_patch(admin_api, f"{widgets()}/a/status", {"status": {"phase": "Bogus"}})
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"status.phase": "FieldValueNotSupported"}


def test_yaml_in_and_out_round_trip(admin_api):
    text = yaml.safe_dump(widget("y", 5, metadata={"labels": {"k": "v"}}))
    created = admin_api.post(
        widgets(), text, content_type="application/yaml", HTTP_ACCEPT="application/yaml"
    )
    assert created.status_code == 201
    assert created["Content-Type"].startswith("application/yaml")
    served = yaml.safe_load(created.content)
    assert served["spec"] == {"size": 5, "color": "red"}
    # the served YAML goes back in unchanged and is accepted as a PUT
    again = admin_api.put(
        f"{widgets()}/y",
        yaml.safe_dump(served),
        content_type="application/yaml",
        HTTP_ACCEPT="application/yaml",
    )
    assert yaml.safe_load(again.content)["spec"] == served["spec"]
    as_json = admin_api.get(f"{widgets()}/y").json()
    assert as_json["metadata"]["labels"] == {"k": "v"}


def test_errors_render_as_yaml_when_asked(admin_api):
    response = admin_api.get(f"{widgets()}/nope", HTTP_ACCEPT="application/yaml")
    assert response.status_code == 404
    assert yaml.safe_load(response.content)["reason"] == "NotFound"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", ["a", "b", "c", "d"]),
        ("tier=web", ["a", "b"]),
        ("tier==web", ["a", "b"]),
        ("tier!=web", ["c", "d"]),  # != also matches objects without the key
        ("tier in (web,db)", ["a", "b", "c"]),
        ("tier notin (web)", ["c", "d"]),
        ("env", ["a", "c"]),
        ("!env", ["b", "d"]),
        ("tier=web,env=prod", ["a"]),
    ],
)
def test_list_label_selector(admin_api, selector, expected):
    for name, labels in (
        ("a", {"tier": "web", "env": "prod"}),
        ("b", {"tier": "web"}),
        ("c", {"tier": "db", "env": "dev"}),
        ("d", {}),
    ):
        admin_api.post(widgets(), widget(name, metadata={"labels": labels}), format="json")
    listed = admin_api.get(widgets(), {"labelSelector": selector}).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == expected


def test_list_bad_label_selector_is_bad_request(admin_api):
    response = admin_api.get(widgets(), {"labelSelector": "tier in (web"})
    assert_status(response, 400, "BadRequest")
    assert "labelSelector" in causes(response)


def test_limit_and_continue_walk_every_item_once(admin_api):
    names = [f"w{i:02d}" for i in range(7)]
    for i, name in enumerate(names):
        admin_api.post(
            widgets(), widget(name, metadata={"labels": {"odd": str(i % 2)}}), format="json"
        )
    seen, token, pages = [], None, 0
    while True:
        params = {"limit": 3, **({"continue": token} if token else {})}
        page = admin_api.get(widgets(), params).json()
        pages += 1
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert seen == names and pages == 3
    odd = admin_api.get(widgets(), {"limit": 2, "labelSelector": "odd=1"}).json()
    assert [i["metadata"]["name"] for i in odd["items"]] == ["w01", "w03"]
    rest = admin_api.get(
        widgets(), {"limit": 2, "labelSelector": "odd=1", "continue": odd["metadata"]["continue"]}
    ).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["w05"]
    assert "continue" not in rest["metadata"]


@pytest.mark.parametrize("params", [{"continue": "garbage!"}, {"limit": "-1"}, {"limit": "many"}])
def test_bad_paging_parameters_are_bad_requests(admin_api, params):
    assert_status(admin_api.get(widgets(), params), 400, "BadRequest")


def test_field_selector_by_name(admin_api):
    for name in ("a", "b"):
        admin_api.post(widgets(), widget(name), format="json")
    listed = admin_api.get(widgets(), {"fieldSelector": "metadata.name=b"}).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["b"]
    assert_status(admin_api.get(widgets(), {"fieldSelector": "spec.size=1"}), 400, "BadRequest")


def test_dry_run_validates_without_persisting(admin_api):
    response = admin_api.post(f"{widgets()}?dryRun=All", widget("a"), format="json")
    assert response.status_code == 201
    assert_status(admin_api.get(f"{widgets()}/a"), 404, "NotFound")
    assert_status(
        admin_api.post(f"{widgets()}?dryRun=All", widget("a", 99), format="json"), 422, "Invalid"
    )


def test_cluster_scoped_kind(admin_api):
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 2},
    }
    created = admin_api.post(gadgets(), manifest, format="json")
    assert created.status_code == 201
    assert "namespace" not in created.json()["metadata"]
    assert admin_api.get(f"{gadgets()}/g").json()["spec"]["size"] == 2
    assert admin_api.delete(f"{gadgets()}/g").json()["status"] == "Success"
    assert_status(admin_api.get(f"{gadgets()}/g"), 404, "NotFound")


def test_immutable_field_is_invalid_on_update(admin_api):
    admin_api.post(widgets(), widget("a", color="blue"), format="json")
    response = merge_patch(admin_api, f"{widgets()}/a", {"spec": {"color": "green"}})
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"spec.color": "FieldValueInvalid"}


def test_unconditional_patch_merges_again_after_a_concurrent_write(admin_api, monkeypatch):
    from portal.machinery import store

    admin_api.post(widgets(), widget("a", 1), format="json")
    real_replace, raced = store._replace, []

    def replace_after_someone_else(kind, namespace, name, manifest, subresource, context):
        if not raced:  # another writer gets in between our read and our write, once
            raced.append(True)
            store.replace(
                kind,
                namespace,
                name,
                {**widget("a", 1), "metadata": {"name": "a", "labels": {"other": "writer"}}},
                context=OPERATOR,
            )
        return real_replace(kind, namespace, name, manifest, subresource, context)

    monkeypatch.setattr(store, "_replace", replace_after_someone_else)
    patched = merge_patch(admin_api, f"{widgets()}/a", {"spec": {"size": 5}})
    assert patched.status_code == 200
    body = patched.json()
    assert body["spec"]["size"] == 5 and body["metadata"]["labels"] == {"other": "writer"}
