"""Discovery documents and the OpenAPI schema."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.api import assert_status

pytestmark = pytest.mark.django_db


def test_group_list_names_every_served_group(admin_api):
    body = admin_api.get("/apis").json()
    assert body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    assert {"rbac.authorization.k8s.io", "testing.kruntimes.io"} <= set(groups)
    assert groups["testing.kruntimes.io"]["preferredVersion"] == {
        "groupVersion": "testing.kruntimes.io/v1",
        "version": "v1",
    }


def test_resource_list_includes_status_subresources(admin_api):
    body = admin_api.get("/apis/testing.kruntimes.io/v1").json()
    resources = {r["name"]: r for r in body["resources"]}
    assert resources["widgets"]["namespaced"] is True
    assert resources["widgets"]["shortNames"] == ["wd"]
    assert resources["widgets/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["gadgets"]["namespaced"] is False
    assert "roles/status" not in {
        r["name"] for r in admin_api.get("/apis/rbac.authorization.k8s.io/v1").json()["resources"]
    }


def test_core_group(admin_api):
    assert admin_api.get("/api").json()["versions"] == ["v1"]
    core = admin_api.get("/api/v1").json()
    assert [r["name"] for r in core["resources"]] == [
        "namespaces",
        "namespaces/status",
        "secrets",
        "configmaps",
        "events",
    ]
    assert {r["name"]: r.get("shortNames") for r in core["resources"]}["configmaps"] == ["cm"]
    events = next(r for r in core["resources"] if r["name"] == "events")
    assert set(events["verbs"]) >= {"get", "list", "create", "patch"}
    new = admin_api.get("/apis/events.k8s.io/v1").json()["resources"]
    assert [(r["name"], sorted(r["verbs"])) for r in new] == [("events", ["get", "list"])]


def test_unknown_group_version(admin_api):
    assert_status(admin_api.get("/apis/testing.kruntimes.io/v2"), 404, "NotFound")


def test_openapi_schema_describes_every_kind(admin_api):
    response = admin_api.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = schema["paths"]
    widgets = "/apis/testing.kruntimes.io/v1/namespaces/{namespace}/widgets"
    assert set(paths[widgets]) >= {"get", "post"}
    assert set(paths[widgets + "/{name}"]) >= {"get", "put", "patch", "delete"}
    assert widgets + "/{name}/status" in paths
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles" in paths
    components = schema["components"]["schemas"]
    spec = components["WidgetManifest"]["properties"]["spec"]
    assert spec["properties"]["size"]["maximum"] == 10
    # the server refuses unknown fields, and the schema says so, at every level
    assert spec["additionalProperties"] is False
    assert spec["properties"]["parts"]["items"]["additionalProperties"] is False
    run = components["RunManifestRequest"]
    assert run["additionalProperties"] is False
    assert run["properties"]["metadata"]["additionalProperties"] is False
    assert run["properties"]["spec"]["properties"]["source"]["additionalProperties"] is False
    # a map stays a map
    assert run["properties"]["metadata"]["properties"]["labels"]["additionalProperties"] == {
        "type": "string"
    }


def test_openapi_schema_patch_bodies_require_nothing(admin_api):
    schema = yaml.safe_load(admin_api.get("/api/schema/").content)
    components = schema["components"]["schemas"]
    assert components["WidgetManifestRequest"]["properties"]["spec"]["required"] == ["size"]
    assert "required" not in components["PatchedWidgetManifestRequest"]["properties"]["spec"]


def test_openapi_schema_has_one_definition_per_serializer_name():
    """Nested serializers are inlined: two apps' EnvVarSerializer cannot take each other's
    component (drf-spectacular keeps one of two same-named components)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    jobs = components["JobManifestRequest"]["properties"]["spec"]["properties"]
    runs = components["RunManifestRequest"]["properties"]["spec"]["properties"]
    assert not any(name.startswith("EnvVar") for name in components)
    assert jobs["env"] != runs["env"]


def test_swagger_ui_is_served(admin_api):
    assert admin_api.get("/api/docs/").status_code == 200


def test_resource_list_includes_served_subresources(admin_api):
    body = admin_api.get("/apis/kruntimes.io/v1alpha1").json()
    resources = {r["name"]: r for r in body["resources"]}
    assert resources["runs/log"]["verbs"] == ["get"]
    assert resources["runs/log"]["kind"] == "Run"
    assert "runtimes/log" not in resources


def test_every_operation_of_the_schema_is_well_formed(admin_api):
    """What a client generator (or the fuzzer) trips on first: a request body keyed by
    something that is not a media type, or two operations sharing an operationId."""
    schema = yaml.safe_load(admin_api.get("/api/schema/").content)
    seen: dict[str, str] = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            media = (operation.get("requestBody") or {}).get("content") or {}
            assert all("/" in key for key in media), (path, method, list(media))
            assert operation["operationId"] not in seen, (path, seen.get(operation["operationId"]))
            seen[operation["operationId"]] = path


# ``kubectl get all`` and ``kubectl get kruntimes`` expand a category through discovery:
# ``all`` holds what a user runs (kube's pods, deployments, jobs, cronjobs), ``kruntimes``
# every kind of the group.
IN_ALL = {"runs", "runtimes", "runtimepods", "workflows", "workflowruns"}
KRUNTIMES = IN_ALL | {"persistentworkspaces", "actions"}


def test_discovery_categories_of_the_kruntimes_kinds(admin_api):
    body = admin_api.get("/apis/kruntimes.io/v1alpha1").json()
    kinds = {r["name"]: r for r in body["resources"] if "/" not in r["name"]}
    assert set(kinds) == KRUNTIMES
    for name, resource in kinds.items():
        expected = ["all", "kruntimes"] if name in IN_ALL else ["kruntimes"]
        assert resource["categories"] == expected, name


def test_no_other_kind_is_in_all(admin_api):
    """A ``kubectl get all`` lists only what is in ``all``: Namespaces, Secrets, RBAC are not,
    as in kube."""
    groups = ["/api/v1"] + [
        f"/apis/{g['preferredVersion']['groupVersion']}"
        for g in admin_api.get("/apis").json()["groups"]
    ]
    in_all = {
        r["name"]
        for url in groups
        for r in admin_api.get(url).json()["resources"]
        if "all" in r.get("categories", [])
    }
    assert in_all == IN_ALL
