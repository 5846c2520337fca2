"""Metadata, versions, conflicts, selectors and deletion, as kube-apiserver answers them."""

from __future__ import annotations

import json

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException


def configmap(name: str, labels: dict | None = None, data: dict | None = None) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data or {}}


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_create_fills_metadata_and_namespace_from_the_url(core):
    created = core.create_namespaced_config_map("default", configmap("a"))
    meta = created.metadata
    assert meta.namespace == "default"
    assert meta.uid and meta.creation_timestamp is not None and meta.generation == 1
    assert int(meta.resource_version) > 0
    assert created.kind == "ConfigMap" and created.api_version == "v1"
    fetched = core.read_namespaced_config_map("a", "default")
    assert fetched.metadata.uid == meta.uid


def test_one_global_resource_version_increases_across_kinds(core):
    first = core.create_namespaced_config_map("default", configmap("a"))
    second = core.create_namespaced_secret("default", {"metadata": {"name": "s"}})
    third = core.create_namespaced_config_map("default", configmap("b"))
    versions = [int(o.metadata.resource_version) for o in (first, second, third)]
    assert versions == sorted(versions) and len(set(versions)) == 3
    listed = core.list_namespaced_config_map("default")
    assert int(listed.metadata.resource_version) == versions[-1]


def test_generate_name_gets_a_suffix(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"generateName": "gen-"}})
    assert created.metadata.name.startswith("gen-") and len(created.metadata.name) == 9


def test_create_of_a_taken_name_is_409_already_exists(core):
    core.create_namespaced_config_map("default", configmap("a"))
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", configmap("a"))
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "AlreadyExists"
    assert status_of(caught.value)["details"] == {"name": "a", "kind": "configmaps"}


def test_create_in_a_missing_namespace_is_404_until_the_namespace_is_created(core):
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("team", configmap("a"))
    assert caught.value.status == 404
    assert status_of(caught.value)["message"] == 'namespaces "team" not found'
    namespace = core.create_namespace({"metadata": {"name": "team"}})
    assert namespace.status.phase == "Active"
    assert core.read_namespace("team").metadata.uid == namespace.metadata.uid
    assert core.create_namespaced_config_map("team", configmap("a")).metadata.namespace == "team"


def test_a_body_namespace_other_than_the_url_is_400(core):
    body = {"metadata": {"name": "a", "namespace": "kube-system"}}
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", body)
    assert caught.value.status == 400


def test_get_of_a_missing_object_is_404_naming_it(core):
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("ghost", "default")
    assert caught.value.status == 404
    assert status_of(caught.value) | {} == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "ghost" not found',
        "reason": "NotFound",
        "details": {"name": "ghost", "kind": "pods"},
        "code": 404,
    }


def test_put_replaces_and_a_stale_resource_version_is_409_conflict(core):
    created = core.create_namespaced_config_map("default", configmap("a", data={"k": "1"}))
    created.data = {"k": "2"}
    replaced = core.replace_namespaced_config_map("a", "default", created)
    assert replaced.data == {"k": "2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert replaced.metadata.uid == created.metadata.uid
    created.data = {"k": "3"}  # still the first version
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("a", "default", created)
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("a", "default").data == {"k": "2"}


def test_patch_with_a_stale_resource_version_is_409_and_without_one_applies(core):
    created = core.create_namespaced_config_map("default", configmap("a", data={"k": "1"}))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"k": "3"}}
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_config_map("a", "default", stale)
    assert caught.value.status == 409
    current = core.read_namespaced_config_map("a", "default")
    assert current.data == {"k": "2"}
    fresh = {"metadata": {"resourceVersion": current.metadata.resource_version}, "data": {"k": "4"}}
    assert core.patch_namespaced_config_map("a", "default", fresh).data == {"k": "4"}


def test_json_patch_and_merge_patch(core):
    core.create_namespaced_config_map("default", configmap("a", labels={"x": "1"}, data={"k": "1"}))
    patched = core.patch_namespaced_config_map(
        "a", "default", [{"op": "replace", "path": "/data/k", "value": "2"}]
    )
    assert patched.data == {"k": "2"}
    merged = core.patch_namespaced_config_map(
        "a",
        "default",
        {"metadata": {"labels": {"x": None, "y": "2"}}},
        _content_type="application/merge-patch+json",
    )
    assert merged.metadata.labels == {"y": "2"}


def test_strategic_merge_patch_merges_containers_by_name(apps):
    apps.create_namespaced_deployment("default", deployment("web", replicas=0))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "b"}]}}}}
    patched = apps.patch_namespaced_deployment("web", "default", patch)
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("main", "b"), ("side", "s")]


def test_a_spec_change_bumps_generation_a_no_op_write_keeps_the_version(apps):
    apps.create_namespaced_deployment("default", deployment("web", replicas=0))
    created = apps.read_namespaced_deployment("web", "default")
    same = apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 0}})
    assert same.metadata.resource_version == created.metadata.resource_version
    labelled = apps.patch_namespaced_deployment(
        "web", "default", {"metadata": {"labels": {"a": "b"}}}
    )
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"replicas": 0, "paused": True}}
    )
    assert scaled.metadata.generation == 2


def test_status_is_written_only_through_the_status_subresource(apps):
    apps.create_namespaced_deployment("default", deployment("web", replicas=0))
    ignored = apps.patch_namespaced_deployment(
        "web", "default", {"status": {"observedGeneration": 7}}
    )
    assert ignored.status.observed_generation != 7
    written = apps.patch_namespaced_deployment_status(
        "web", "default", {"status": {"observedGeneration": 7}, "spec": {"replicas": 5}}
    )
    assert written.status.observed_generation == 7 and written.spec.replicas == 0
    current = apps.read_namespaced_deployment("web", "default")
    current.status.observed_generation = 8
    assert (
        apps.replace_namespaced_deployment_status(
            "web", "default", current
        ).status.observed_generation
        == 8
    )


def deployment(name: str, replicas: int) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "main", "image": "a"}, {"name": "side", "image": "s"}]
                },
            },
        },
    }


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (web,db)", ["a", "b", "c"]),
        ("app notin (web,db)", ["d"]),
        ("tier", ["a", "c"]),
        ("!tier", ["b", "d"]),
        ("app=web,tier=front", ["a"]),
        ("app in (web, db),!tier", ["b"]),
    ],
)
def test_label_selectors_on_list(core, selector, expected):
    core.create_namespaced_config_map("default", configmap("a", {"app": "web", "tier": "front"}))
    core.create_namespaced_config_map("default", configmap("b", {"app": "web"}))
    core.create_namespaced_config_map("default", configmap("c", {"app": "db", "tier": "back"}))
    core.create_namespaced_config_map("default", configmap("d", {}))
    listed = core.list_namespaced_config_map("default", label_selector=selector)
    assert [item.metadata.name for item in listed.items] == expected


def test_a_malformed_label_selector_is_400(core):
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("default", label_selector="a=b=c,!x=y")
    assert caught.value.status == 400


def test_field_selectors_name_namespace_and_phase(core, kube):
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespaced_config_map("default", configmap("b"))
    core.create_namespaced_config_map("other", configmap("a"))
    by_name = core.list_config_map_for_all_namespaces(field_selector="metadata.name=a")
    assert sorted(i.metadata.namespace for i in by_name.items) == ["default", "other"]
    by_namespace = core.list_config_map_for_all_namespaces(
        field_selector="metadata.namespace!=default"
    )
    assert [i.metadata.namespace for i in by_namespace.items] == ["other"]
    for name in ("p", "q"):
        core.create_namespaced_pod(
            "default", {"metadata": {"name": name}, "spec": {"containers": []}}
        )
    kube.fail_pod("default", "q")
    running = core.list_namespaced_pod("default", field_selector="status.phase=Running")
    assert [i.metadata.name for i in running.items] == ["p"]
    not_running = core.list_namespaced_pod("default", field_selector="status.phase!=Running")
    assert [i.metadata.name for i in not_running.items] == ["q"]
    assert core.list_namespaced_pod("default", field_selector="status.phase=Pending").items == []


def test_an_unsupported_field_is_400(core):
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("default", field_selector="data.k=1")
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == "field label not supported: data.k"


def test_delete_removes_and_accepts_a_propagation_policy(core):
    core.create_namespaced_config_map("default", configmap("a"))
    core.delete_namespaced_config_map("a", "default", propagation_policy="Background")
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_config_map("a", "default")
    assert caught.value.status == 404
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("a", "default")
    assert caught.value.status == 404


def test_a_finalizer_holds_deletion_until_it_is_removed(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a", "finalizers": ["x/y"]}})
    core.delete_namespaced_config_map("a", "default")
    held = core.read_namespaced_config_map("a", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("a", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("a", "default")


def test_delete_with_a_stale_uid_precondition_is_409(core):
    core.create_namespaced_config_map("default", configmap("a"))
    body = kubernetes.client.V1DeleteOptions(
        preconditions=kubernetes.client.V1Preconditions(uid="other")
    )
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("a", "default", body=body)
    assert caught.value.status == 409


def test_dependents_are_deleted_in_the_background_and_kept_on_orphan(core):
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "dep", "ownerReferences": [ref]}}
    )
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")
    orphan = core.read_namespaced_config_map("dep", "default")
    assert orphan.metadata.owner_references is None
    owner = core.create_namespaced_config_map("default", configmap("owner"))
    ref["uid"] = owner.metadata.uid
    core.patch_namespaced_config_map("dep", "default", {"metadata": {"ownerReferences": [ref]}})
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Background")
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("dep", "default")


def test_version_answers_with_and_without_a_slash(client, kube):
    version = kubernetes.client.VersionApi(client).get_code()
    assert version.major == "1"
    import urllib.request

    with urllib.request.urlopen(f"{kube.url}/version/") as answer:
        assert json.loads(answer.read())["gitVersion"] == version.git_version
