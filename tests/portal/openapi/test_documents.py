"""/openapi/v3: the index of group-versions and one OpenAPI 3.0 document per group-version, as
kube-apiserver serves them, generated from the serializers that validate."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from portal.machinery.registry import registry
from tests.helpers.api import assert_status

pytestmark = pytest.mark.django_db
RUN = "io.kruntimes.v1alpha1.Run"


def document(api, key: str) -> dict:
    response = api.get(f"/openapi/v3/{key}")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/json"
    return response.json()


def run_schema(api) -> dict:
    return document(api, "apis/kruntimes.io/v1alpha1")["components"]["schemas"][RUN]


def test_the_index_lists_every_served_group_version_by_hash(admin_api):
    index = admin_api.get("/openapi/v3").json()
    served = {f"apis/{k.group}/{k.version}" if k.group else "api/v1" for k in registry.kinds}
    assert set(index["paths"]) == served
    url = index["paths"]["apis/kruntimes.io/v1alpha1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/kruntimes.io/v1alpha1?hash=")
    response = admin_api.get(url)
    assert response.status_code == 200
    assert response["ETag"] == f'"{url.split("hash=")[1]}"'


def test_every_document_is_valid_openapi_and_names_each_kind(admin_api):
    index = admin_api.get("/openapi/v3").json()
    for key in index["paths"]:
        body = document(admin_api, key)
        validate(body)
        named = {
            (g["group"], g["version"], g["kind"])
            for schema in body["components"]["schemas"].values()
            for g in schema.get("x-kubernetes-group-version-kind", [])
        }
        for kind in registry.kinds:
            if key.endswith(f"{kind.group}/{kind.version}" if kind.group else "api/v1"):
                assert (kind.group, kind.version, kind.kind) in named, (key, kind.kind)
                assert (kind.group, kind.version, f"{kind.kind}List") in named


def test_kube_names_the_definitions(admin_api):
    core = document(admin_api, "api/v1")["components"]["schemas"]
    rbac = document(admin_api, "apis/rbac.authorization.k8s.io/v1")["components"]["schemas"]
    assert "io.k8s.api.core.v1.Namespace" in core
    assert "io.k8s.api.rbac.v1.ClusterRole" in rbac
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in rbac


def test_a_kind_refers_to_object_meta_and_describes_its_fields(admin_api):
    run = run_schema(admin_api)
    assert run["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    source = run["properties"]["spec"]["properties"]["source"]
    assert source["description"]
    assert "inline" in source["properties"]["inline"]["description"].lower()


def test_required_fields_enums_and_bounds_come_from_the_serializer(admin_api):
    spec = run_schema(admin_api)["properties"]["spec"]
    assert {"runtime", "mode"} <= set(spec["required"])
    assert "source" not in spec["required"]
    assert spec["properties"]["runtime"]["maxLength"] == 63
    workspace = spec["properties"]["workspace"]["properties"]
    assert workspace["kind"]["enum"] == ["PersistentWorkspace"]
    assert spec["properties"]["ttlSecondsAfterFinished"]["minimum"] == 0


def test_structural_objects_are_open_only_where_they_are_maps(admin_api):
    """kube prunes (or, under fieldValidation=Strict, refuses) unknown fields itself: a CRD's
    schema may not say additionalProperties: false, and a map says what its values are."""
    run = run_schema(admin_api)
    spec = run["properties"]["spec"]
    assert "additionalProperties" not in spec
    assert "additionalProperties" not in spec["properties"]["source"]
    requests = spec["properties"]["resources"]["properties"]["requests"]
    assert requests["additionalProperties"]["x-kubernetes-int-or-string"] is True
    runtime = document(admin_api, "apis/kruntimes.io/v1alpha1")["components"]["schemas"][
        "io.kruntimes.v1alpha1.Runtime"
    ]
    template = runtime["properties"]["spec"]["properties"]["template"]
    assert template == {**template, "type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_every_patch_of_a_kind_offers_field_validation(admin_api):
    """kubectl apply leaves validation to the server only when the kind's PATCH operation
    lists fieldValidation; it picks any one of them (the status subresource's too)."""
    body = document(admin_api, "apis/kruntimes.io/v1alpha1")
    patches = [
        operations["patch"]
        for operations in body["paths"].values()
        if "patch" in operations
        and operations["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Run"
    ]
    assert len(patches) == 2
    for patch in patches:
        assert "fieldValidation" in {p["name"] for p in patch["parameters"] if p["in"] == "query"}
        assert "application/merge-patch+json" in patch["requestBody"]["content"]


def test_paths_match_the_served_routes(admin_api):
    paths = document(admin_api, "apis/kruntimes.io/v1alpha1")["paths"]
    runs = "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs"
    assert set(paths[runs]) >= {"get", "post"}
    assert set(paths[runs + "/{name}"]) >= {"get", "put", "patch", "delete"}
    assert set(paths[runs + "/{name}/status"]) >= {"get", "put", "patch"}
    assert "get" in paths[runs + "/{name}/log"]
    assert "get" in paths["/apis/kruntimes.io/v1alpha1/runs"]


def test_if_none_match_answers_not_modified(admin_api):
    first = admin_api.get("/openapi/v3/apis/kruntimes.io/v1alpha1")
    again = admin_api.get(
        "/openapi/v3/apis/kruntimes.io/v1alpha1", HTTP_IF_NONE_MATCH=first["ETag"]
    )
    assert again.status_code == 304
    assert admin_api.get("/openapi/v3", HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_a_hashed_url_is_cacheable_and_a_stale_hash_redirects(admin_api):
    url = admin_api.get("/openapi/v3").json()["paths"]["api/v1"]["serverRelativeURL"]
    fresh = admin_api.get(url)
    assert fresh["Cache-Control"] == "public, immutable"
    assert "Expires" in fresh
    assert "Cache-Control" not in admin_api.get("/openapi/v3/api/v1")
    stale = admin_api.get("/openapi/v3/api/v1?hash=0123")
    assert stale.status_code == 301
    assert stale["Location"] == url


def test_protobuf_only_is_not_acceptable(admin_api):
    response = admin_api.get(
        "/openapi/v3/api/v1",
        HTTP_ACCEPT="application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
    )
    assert_status(response, 406, "NotAcceptable")
    both = admin_api.get(
        "/openapi/v3/api/v1",
        HTTP_ACCEPT="application/com.github.proto-openapi.spec.v3@v1.0+protobuf, application/json",
    )
    assert both.status_code == 200


def test_unknown_documents_and_paths_are_json_status_404s(admin_api):
    assert_status(admin_api.get("/openapi/v3/apis/nope.example.com/v1"), 404, "NotFound")
    assert_status(admin_api.get("/openapi/v3/apis/kruntimes.io/v9"), 404, "NotFound")
    assert_status(admin_api.get("/openapi/v3/elsewhere"), 404, "NotFound")
    assert_status(admin_api.get("/openapi/v4"), 404, "NotFound")


def test_openapi_is_read_by_authenticated_users_like_discovery(anon_api):
    assert_status(anon_api.get("/apis"), 401, "Unauthorized")
    assert_status(anon_api.get("/openapi/v3"), 401, "Unauthorized")
    assert_status(anon_api.get("/openapi/v3/api/v1"), 401, "Unauthorized")


def test_deletes_describe_their_delete_options_body(admin_api):
    body = document(admin_api, "apis/kruntimes.io/v1alpha1")
    options_ref = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    runs = "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs"
    one, many = body["paths"][runs + "/{name}"]["delete"], body["paths"][runs]["delete"]
    assert (one["x-kubernetes-action"], many["x-kubernetes-action"]) == (
        "delete",
        "deletecollection",
    )
    for operation in (one, many):
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": options_ref}
        queries = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
        assert queries >= {"dryRun", "propagationPolicy", "gracePeriodSeconds"}
    options = body["components"]["schemas"][options_ref.rsplit("/", 1)[1]]
    assert set(options["properties"]) >= {
        "dryRun",
        "gracePeriodSeconds",
        "preconditions",
        "propagationPolicy",
        "orphanDependents",
    }
    assert all(p.get("description") for p in options["properties"].values())


def test_lists_server_side_apply_merges_by_key_are_marked(admin_api):
    """kubectl and client-go read the list types to merge lists item by item, as the server
    does (portal.machinery.managed_fields.LIST_MAP_KEYS)."""
    run = run_schema(admin_api)
    env = run["properties"]["spec"]["properties"]["env"]
    assert env["x-kubernetes-list-type"] == "map"
    assert env["x-kubernetes-list-map-keys"] == ["name"]
    conditions = run["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    schemas = document(admin_api, "apis/kruntimes.io/v1alpha1")["components"]["schemas"]
    meta = next(s for key, s in schemas.items() if key.endswith(".ObjectMeta"))["properties"]
    assert meta["ownerReferences"]["x-kubernetes-list-map-keys"] == ["uid"]
    assert meta["finalizers"]["x-kubernetes-list-type"] == "set"
    assert meta["managedFields"]["items"]["properties"]["operation"]["enum"] == ["Apply", "Update"]
