"""A strategic merge patch through the API: each built-in kind's declared strategies (as its Go
struct tags), dryRun=All stores nothing, and custom resources keep kube-apiserver's 415."""

from __future__ import annotations

import json

import pytest

from portal.machinery.registry import registry
from tests.helpers.api import assert_status, causes, widget, widgets

pytestmark = pytest.mark.django_db

SMP = "application/strategic-merge-patch+json"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
UIDS = {"u1": "7f2c1a52-0d7e-4d8e-9a51-1b7c3c2f0001", "u2": "7f2c1a52-0d7e-4d8e-9a51-1b7c3c2f0002"}


def smp(client, url: str, body, query: str = ""):
    return client.patch(f"{url}{query}", json.dumps(body), content_type=SMP)


@pytest.fixture
def namespace(admin_api) -> str:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    assert admin_api.post("/api/v1/namespaces", body, format="json").status_code == 201
    return "/api/v1/namespaces/team"


def test_every_built_in_kind_declares_strategies_and_no_custom_kind_does():
    built_in = {"", "rbac.authorization.k8s.io", "events.k8s.io", "apps"}
    for kind in registry.kinds:
        assert (kind.strategic_merge is not None) == (kind.group in built_in), kind.kind


def test_namespace_metadata_finalizers_merge_and_labels_merge(admin_api, namespace):
    assert smp(admin_api, namespace, {"metadata": {"finalizers": ["a.io/x"]}}).status_code == 200
    patched = smp(
        admin_api, namespace, {"metadata": {"finalizers": ["b.io/y"], "labels": {"k": "v"}}}
    )
    assert patched.status_code == 200, patched.json()
    assert patched.json()["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    assert patched.json()["metadata"]["labels"]["k"] == "v"
    removed = smp(
        admin_api, namespace, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"]}}
    )
    assert removed.json()["metadata"]["finalizers"] == ["b.io/y"]


def test_namespace_spec_finalizers_are_atomic_so_replaced(admin_api, namespace):
    patched = smp(admin_api, namespace, {"spec": {"finalizers": []}})
    assert patched.status_code == 200, patched.json()
    assert patched.json()["spec"].get("finalizers", []) == []


def test_owner_references_merge_by_uid(admin_api, namespace):
    def owner(uid: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{uid}", "uid": UIDS[uid]}

    url = "/api/v1/namespaces/team/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    assert admin_api.post(url, body, format="json").status_code == 201
    smp(admin_api, f"{url}/c", {"metadata": {"ownerReferences": [owner("u1")]}})
    patched = smp(
        admin_api, f"{url}/c", {"metadata": {"ownerReferences": [owner("u2")]}, "data": {"b": "2"}}
    )
    assert patched.status_code == 200, patched.json()
    assert [o["uid"] for o in patched.json()["metadata"]["ownerReferences"]] == [
        UIDS["u1"],
        UIDS["u2"],
    ]
    assert patched.json()["data"] == {"a": "1", "b": "2"}


def test_cluster_role_rules_have_no_patch_strategy_so_are_replaced(admin_api):
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    other = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [rule, other],
    }
    assert admin_api.post(f"{RBAC}/clusterroles", body, format="json").status_code == 201
    patched = smp(admin_api, f"{RBAC}/clusterroles/r", {"rules": [other]})
    assert patched.status_code == 200, patched.json()
    assert patched.json()["rules"] == [other]


def test_role_binding_subjects_have_no_patch_strategy_so_are_replaced(admin_api, namespace):
    def subject(name: str) -> dict:
        return {"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}

    url = f"{RBAC}/namespaces/team/rolebindings"
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "b"},
        "subjects": [subject("ann"), subject("bob")],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
    }
    assert admin_api.post(url, body, format="json").status_code == 201, admin_api.post(
        url, body, format="json"
    ).json()
    patched = smp(admin_api, f"{url}/b", {"subjects": [subject("cy")]})
    assert patched.status_code == 200, patched.json()
    assert patched.json()["subjects"] == [subject("cy")]


def test_dry_run_answers_the_patched_object_and_stores_nothing(admin_api, namespace):
    before = admin_api.get(namespace).json()
    answered = smp(admin_api, namespace, {"metadata": {"labels": {"dry": "run"}}}, "?dryRun=All")
    assert answered.status_code == 200, answered.json()
    assert answered.json()["metadata"]["labels"]["dry"] == "run"
    after = admin_api.get(namespace).json()
    assert after["metadata"] == before["metadata"]


def test_a_bad_directive_is_a_400_naming_its_field(admin_api, namespace):
    response = smp(admin_api, namespace, {"metadata": {"labels": {"$patch": "explode"}}})
    assert_status(response, 400, "BadRequest")
    assert "metadata.labels.$patch" in causes(response)


def test_custom_resources_keep_kube_apiservers_415(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = smp(admin_api, f"{widgets()}/a", {"spec": {"size": 2}})
    body = assert_status(response, 415, "UnsupportedMediaType")
    assert body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: "
    )
    assert "strategic" not in body["message"]


def test_namespace_status_conditions_merge_by_type():
    from portal.machinery.strategic_merge import apply, with_object_meta

    kind = registry.for_manifest("v1", "Namespace")
    assert kind is not None and kind.strategic_merge is not None
    original = {"status": {"conditions": [{"type": "A", "status": "True"}]}}
    patch = {"status": {"conditions": [{"type": "B", "status": "False"}]}}
    merged = apply(original, patch, with_object_meta(kind.strategic_merge))
    assert [c["type"] for c in merged["status"]["conditions"]] == ["A", "B"]


def test_the_store_refuses_a_strategic_merge_patch_for_a_custom_kind(admin_user):
    from portal.machinery import errors, store

    kind = registry.for_manifest("testing.kruntimes.io/v1", "Widget")
    assert kind is not None
    with pytest.raises(errors.StatusError) as caught:
        store.patch(
            kind, "default", "a", {}, patch_type=SMP, context=store.WriteContext(user=admin_user)
        )
    assert caught.value.code == 415
