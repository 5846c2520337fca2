"""kubectl's imperative commands against ``manage.py up --tls``: kubectl sends built-in kinds
as protobuf (``application/vnd.kubernetes.protobuf``, no JSON fallback) and asks for protobuf
answers first, so every ``kubectl create`` below fails with 415 unless both directions are
served (issue 28, item 4). Objects are read back with ``kubectl get -o json``/``-o yaml``."""

from __future__ import annotations

import base64
import json

import pytest
import yaml

from tests.helpers.kubectl import kubectl, ok

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "1"}


@pytest.fixture
def config(admin_kubeconfig):
    return admin_kubeconfig


def get(config, *args: str) -> dict:
    return json.loads(ok(kubectl(config, "get", *args, "-o", "json")))


def creates_every_built_in_kind(config) -> None:
    assert ok(kubectl(config, "create", "ns", "team")).strip() == "namespace/team created"
    assert answered_protobuf(config, "create", "ns", "created-as-protobuf")
    namespace = get(config, "ns", "team")
    assert namespace["status"]["phase"] == "Active"
    assert namespace["metadata"]["uid"] and namespace["metadata"]["creationTimestamp"]

    created = ok(kubectl(config, "create", "configmap", "cm", "--from-literal=a=b", "-n", "team"))
    assert created.strip() == "configmap/cm created"
    assert get(config, "configmap", "cm", "-n", "team")["data"] == {"a": "b"}

    ok(kubectl(config, "create", "secret", "generic", "s", "--from-literal=a=b", "-n", "team"))
    secret = get(config, "secret", "s", "-n", "team")
    assert secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["a"]) == b"b"

    ok(kubectl(config, "create", "role", "reader", "--verb=get", "--resource=runs", "-n", "team"))
    role = get(config, "role", "reader", "-n", "team")
    assert role["rules"] == [
        {"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["get"]}
    ]

    ok(kubectl(config, "create", "rolebinding", "rb", "--role=reader", "--user=bob", "-n", "team"))
    binding = get(config, "rolebinding", "rb", "-n", "team")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "reader",
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}
    ]

    ok(kubectl(config, "create", "clusterrole", "lister", "--verb=list", "--resource=namespaces"))
    assert get(config, "clusterrole", "lister")["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}
    ]
    ok(kubectl(config, "create", "clusterrolebinding", "crb", "--clusterrole=lister", "--user=bob"))
    assert get(config, "clusterrolebinding", "crb")["roleRef"]["name"] == "lister"

    # bob's grant is real: can-i (a protobuf SelfSubjectAccessReview) answers as RBAC does
    assert ok(kubectl(config, "auth", "can-i", "get", "runs", "-n", "team", "--as", "bob")) == (
        "yes\n"
    )


def reads_protobuf_answers(config) -> None:
    """``kubectl describe`` reads through client-go's typed clients, which ask for protobuf
    (``kubectl get`` asks for JSON): every line below was decoded from a protobuf answer."""
    assert "Status:       Active" in ok(kubectl(config, "describe", "ns", "team"))
    assert answered_protobuf(config, "describe", "ns", "team")
    secret = ok(kubectl(config, "describe", "secret", "s", "-n", "team"))
    assert "Type:  Opaque" in secret and "a:  1 bytes" in secret
    role = ok(kubectl(config, "describe", "role", "reader", "-n", "team"))
    assert "runs.kruntimes.io  []                 []              [get]" in role
    binding = ok(kubectl(config, "describe", "rolebinding", "rb", "-n", "team"))
    assert "Kind:  Role\n  Name:  reader" in binding and "User  bob" in binding
    configmap = ok(kubectl(config, "describe", "configmap", "cm", "-n", "team"))
    assert "a:\n----\nb" in configmap
    shown = yaml.safe_load(
        ok(kubectl(config, "get", "configmap", "cm", "-n", "team", "-o", "yaml"))
    )
    assert shown["data"] == {"a": "b"} and shown["kind"] == "ConfigMap"
    namespaces = yaml.safe_load(ok(kubectl(config, "get", "ns", "-o", "yaml")))
    assert {"default", "team"} <= {item["metadata"]["name"] for item in namespaces["items"]}


def answered_protobuf(config, *args: str) -> bool:
    """Whether an answer to the command came as protobuf (kubectl's -v=8 log shows each
    request's and answer's headers; only an answer carries ``Vary``)."""
    log = kubectl(config, *args, "-v=8").stderr
    answers = log.split('"Response" status=')[1:]
    return any("Content-Type: application/vnd.kubernetes.protobuf" in a for a in answers)


def refusals_are_statuses_kubectl_reads(config) -> None:
    again = kubectl(config, "create", "ns", "team")
    assert again.returncode == 1
    # the 409 Status came as protobuf: kubectl shows its reason and message
    assert 'Error from server (AlreadyExists): namespaces "team" already exists' in again.stderr
    assert answered_protobuf(config, "create", "ns", "team")
    invalid = kubectl(config, "create", "ns", "Not_A_Name")
    assert invalid.returncode == 1
    # kubectl words an Invalid Status from its details.causes (decoded from protobuf)
    assert invalid.stderr.startswith(
        'The Namespace "Not_A_Name" is invalid: metadata.name: Invalid value: "Not_A_Name": '
    ), invalid.stderr


def test_kubectl_create_get_and_refusals_over_protobuf(config):
    """One server for the module: the steps share it."""
    creates_every_built_in_kind(config)
    reads_protobuf_answers(config)
    refusals_are_statuses_kubectl_reads(config)
