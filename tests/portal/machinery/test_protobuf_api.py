"""Protobuf over the REST API: bodies of the built-in kinds are read as their JSON would be,
answers are protobuf when the client's Accept prefers it and the kind is built in, and custom
kinds stay JSON, as kube-apiserver does for CRDs. Answers are read back with the protobuf
library alone."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.machinery.kubeproto import core_pb2, meta_pb2, rbac_pb2, runtime_pb2
from portal.machinery.protobuf import ANSWERS, MAGIC, MEDIA_TYPE, to_dict
from tests.helpers.runs import run_manifest

pytestmark = pytest.mark.django_db
KUBECTL_ACCEPT = f"{MEDIA_TYPE},application/json"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
RBAC = "rbac.authorization.k8s.io"
TIME = "2026-01-01T00:00:00Z"

# every built-in kind served: its collection URL and an object with every kind of field
BUILT_IN = {
    "Namespace": ("/api/v1/namespaces", {"metadata": {"name": "team", "labels": {"a": "b"}}}),
    "ConfigMap": (
        CONFIGMAPS,
        {
            "metadata": {"name": "cm", "annotations": {"n": "v"}, "finalizers": ["x.io/keep"]},
            "data": {"a": "b"},
            "binaryData": {"bin": "AP8="},
            "immutable": False,
        },
    ),
    "Secret": (
        "/api/v1/namespaces/default/secrets",
        {"metadata": {"name": "s"}, "data": {"a": "Yg=="}, "type": "Opaque"},
    ),
    "Event": (
        "/api/v1/namespaces/default/events",
        {
            "metadata": {"name": "ev"},
            "involvedObject": {"kind": "Run", "name": "r1", "namespace": "default"},
            "reason": "Started",
            "message": "it started",
            "type": "Normal",
            "count": 2,
            "firstTimestamp": TIME,
            "lastTimestamp": TIME,
            "source": {"component": "portal"},
        },
    ),
    # written as core/v1 (events.k8s.io/v1 is read-only here), read in both shapes
    "events.k8s.io Event": (
        "/api/v1/namespaces/default/events",
        {
            "metadata": {"name": "ev2"},
            "involvedObject": {"kind": "Run", "name": "r1", "namespace": "default"},
            "message": "a note",
            "reason": "Started",
            "type": "Normal",
            "eventTime": "2026-01-01T00:00:00.250000Z",
            "reportingComponent": "portal",
            "reportingInstance": "portal-1",
            "action": "Start",
        },
    ),
    "ControllerRevision": (
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        {"metadata": {"name": "r1"}, "data": {"spec": {"x": [1, "two"]}}, "revision": 1},
    ),
    "Role": (
        f"/apis/{RBAC}/v1/namespaces/default/roles",
        {
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        },
    ),
    "ClusterRole": (
        f"/apis/{RBAC}/v1/clusterroles",
        {
            "metadata": {"name": "lister"},
            "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
        },
    ),
    "RoleBinding": (
        f"/apis/{RBAC}/v1/namespaces/default/rolebindings",
        {
            "metadata": {"name": "rb"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "bob", "apiGroup": RBAC}],
        },
    ),
    "ClusterRoleBinding": (
        f"/apis/{RBAC}/v1/clusterrolebindings",
        {
            "metadata": {"name": "crb"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "devs", "apiGroup": RBAC}],
        },
    ),
}

READ_AT = {"events.k8s.io Event": "/apis/events.k8s.io/v1/namespaces/default/events"}


def read(response) -> dict:
    """A protobuf answer read with the library alone, as the JSON of the same answer."""
    assert response["Content-Type"] == MEDIA_TYPE, response.content
    assert response.content.startswith(MAGIC)
    unknown = runtime_pb2.Unknown.FromString(response.content[len(MAGIC) :])
    key = (unknown.typeMeta.apiVersion, unknown.typeMeta.kind)
    message = ANSWERS[key].FromString(unknown.raw)
    return {"apiVersion": key[0], "kind": key[1], **to_dict(message)}


def omitempty(value):
    """A JSON answer as Go reads and writes it: empty strings and nulls in objects are absent."""
    if isinstance(value, dict):
        return {k: omitempty(v) for k, v in value.items() if v not in ("", None)}
    if isinstance(value, list):
        return [omitempty(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_built_in_kind_is_answered_as_its_json_in_protobuf(admin_api, name):
    url, manifest = BUILT_IN[name]
    created = admin_api.post(url, manifest, format="json")
    assert created.status_code == 201, created.content
    url = READ_AT.get(name, url)
    item = f"{url}/{manifest['metadata']['name']}"
    as_json = admin_api.get(item).json()
    assert read(admin_api.get(item, HTTP_ACCEPT=KUBECTL_ACCEPT)) == omitempty(as_json)
    listed = admin_api.get(url, HTTP_ACCEPT=KUBECTL_ACCEPT)
    json_list = omitempty(admin_api.get(url).json())
    for listed_item in json_list["items"]:  # a list's items carry no type in protobuf (as Go's)
        del listed_item["apiVersion"], listed_item["kind"]
    assert read(listed) == json_list


def configmap_body(name: str, data: dict[str, str], resource_version: str = "") -> bytes:
    message = core_pb2.ConfigMap(
        metadata=meta_pb2.ObjectMeta(name=name, resourceVersion=resource_version), data=data
    )
    return envelope("v1", "ConfigMap", message)


def envelope(api_version: str, kind: str, message) -> bytes:
    unknown = runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion=api_version, kind=kind),
        raw=message.SerializeToString(),
    )
    return MAGIC + unknown.SerializeToString()


def test_create_and_replace_with_protobuf_bodies(admin_api):
    created = admin_api.generic(
        "POST", CONFIGMAPS, configmap_body("cm", {"a": "b"}), content_type=MEDIA_TYPE
    )
    assert created.status_code == 201, created.content
    assert created.json()["data"] == {"a": "b"}  # no protobuf Accept: a JSON answer
    version = created.json()["metadata"]["resourceVersion"]
    replaced = admin_api.generic(
        "PUT",
        f"{CONFIGMAPS}/cm",
        configmap_body("cm", {"a": "c"}, version),
        content_type=MEDIA_TYPE,
        HTTP_ACCEPT=KUBECTL_ACCEPT,
    )
    assert replaced.status_code == 200
    assert read(replaced)["data"] == {"a": "c"}
    stale = admin_api.generic(
        "PUT",
        f"{CONFIGMAPS}/cm",
        configmap_body("cm", {"a": "d"}, version),
        content_type=MEDIA_TYPE,
        HTTP_ACCEPT=KUBECTL_ACCEPT,
    )
    assert stale.status_code == 409
    assert read(stale)["reason"] == "Conflict"


def test_a_patch_is_never_protobuf(admin_api):
    assert (
        admin_api.post(CONFIGMAPS, {"metadata": {"name": "cm"}}, format="json").status_code == 201
    )
    response = admin_api.generic(
        "PATCH", f"{CONFIGMAPS}/cm", configmap_body("cm", {"a": "b"}), content_type=MEDIA_TYPE
    )
    assert response.status_code == 415
    assert "merge patch" in response.json()["message"]
    assert not admin_api.get(f"{CONFIGMAPS}/cm").json().get("data")


def test_a_protobuf_create_runs_rbac_like_json(user_api):
    body = envelope("rbac.authorization.k8s.io/v1", "Role", rbac_pb2.Role(metadata={"name": "r"}))
    refused = user_api.generic(
        "POST",
        f"/apis/{RBAC}/v1/namespaces/default/roles",
        body,
        content_type=MEDIA_TYPE,
        HTTP_ACCEPT=KUBECTL_ACCEPT,
    )
    assert refused.status_code == 403
    status = read(refused)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Forbidden", 403)


def test_a_validation_error_is_a_protobuf_status_with_its_causes(admin_api):
    response = admin_api.generic(
        "POST",
        CONFIGMAPS,
        configmap_body("Not_A_Name", {}),
        content_type=MEDIA_TYPE,
        HTTP_ACCEPT=KUBECTL_ACCEPT,
    )
    assert response.status_code == 422
    status = read(response)
    assert status["reason"] == "Invalid"
    assert [cause["field"] for cause in status["details"]["causes"]] == ["metadata.name"]


def test_a_missing_object_is_a_protobuf_not_found(admin_api):
    response = admin_api.get(f"{CONFIGMAPS}/nothing", HTTP_ACCEPT=KUBECTL_ACCEPT)
    assert response.status_code == 404
    assert read(response)["reason"] == "NotFound"


def test_a_body_of_another_kind_is_refused_as_json_would_be(admin_api):
    body = envelope("v1", "Secret", core_pb2.Secret(metadata={"name": "s"}))
    response = admin_api.generic("POST", CONFIGMAPS, body, content_type=MEDIA_TYPE)
    assert response.status_code == 400
    assert response.json()["details"]["causes"][0]["field"] == "kind"


def test_a_custom_kind_in_protobuf_is_415_naming_json(admin_api):
    url = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"
    body = envelope("kruntimes.io/v1alpha1", "Run", meta_pb2.ObjectMeta(name="r"))
    response = admin_api.generic("POST", url, body, content_type=MEDIA_TYPE)
    assert response.status_code == 415
    assert response.json()["reason"] == "UnsupportedMediaType"
    assert "application/json" in response.json()["message"]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (KUBECTL_ACCEPT, MEDIA_TYPE),
        ("application/json", "application/json"),
        ("*/*", "application/json"),
        (f"application/json;q=0.5,{MEDIA_TYPE}", MEDIA_TYPE),
        (f"application/json,{MEDIA_TYPE}", "application/json"),
        ("application/yaml", "application/yaml"),
    ],
)
def test_the_answer_is_the_clients_first_choice(admin_api, accept, expected):
    response = admin_api.get("/api/v1/namespaces/default", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == expected


def test_a_table_is_json_even_for_a_protobuf_client(admin_api):
    accept = (
        f"{MEDIA_TYPE};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
    )
    response = admin_api.get("/api/v1/namespaces", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response.json()["kind"] == "Table"


def test_custom_kinds_stay_json(admin_api):
    url = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"
    assert admin_api.post(url, run_manifest("r1"), format="json").status_code == 201
    response = admin_api.get(f"{url}/r1", HTTP_ACCEPT=KUBECTL_ACCEPT)
    assert response["Content-Type"] == "application/json"
    assert response.json()["kind"] == "Run"
    only_protobuf = admin_api.get(f"{url}/r1", HTTP_ACCEPT=MEDIA_TYPE)
    assert only_protobuf.status_code == 406
    assert only_protobuf.json()["reason"] == "NotAcceptable"


def test_the_access_review_answer_is_protobuf_for_kubectl(admin_api):
    from portal.machinery.kubeproto import authorization_pb2

    review = authorization_pb2.SelfSubjectAccessReview(
        spec={"resourceAttributes": {"verb": "get", "resource": "configmaps"}}
    )
    response = admin_api.generic(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", review),
        content_type=MEDIA_TYPE,
        HTTP_ACCEPT=KUBECTL_ACCEPT,
    )
    assert response.status_code == 201
    assert read(response)["status"]["allowed"] is True


@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(st.binary(max_size=120), st.booleans())
def test_random_protobuf_bodies_never_fail_the_server(admin_api, data, with_envelope):
    body = data
    if with_envelope:
        unknown = runtime_pb2.Unknown(
            typeMeta=runtime_pb2.TypeMeta(apiVersion="v1", kind="ConfigMap"), raw=data
        )
        body = MAGIC + unknown.SerializeToString()
    response = admin_api.generic(
        "POST", CONFIGMAPS, body, content_type=MEDIA_TYPE, HTTP_ACCEPT=KUBECTL_ACCEPT
    )
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        assert read(response)["kind"] == "Status"
