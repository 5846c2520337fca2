"""The protobuf codec against bytes it did not make: kubectl's own request bodies (captured),
messages built field by field with the protobuf library, and its answers read back by the
library. Field numbers are Kubernetes' (``portal/machinery/kubeproto/*.proto``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.exceptions import APIException, ParseError, UnsupportedMediaType

from portal.machinery.kubeproto import apps_pb2, core_pb2, meta_pb2, rbac_pb2, runtime_pb2
from portal.machinery.protobuf import (
    MAGIC,
    OBJECTS,
    decode_object,
    encode_object,
    to_dict,
)
from tests.helpers.kubectl_protobuf import KUBECTL_CREATE_BODIES

RBAC = "rbac.authorization.k8s.io"


def raw_envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion=api_version, kind=kind), raw=raw
    )
    return MAGIC + unknown.SerializeToString()


def envelope(api_version: str, kind: str, message) -> bytes:
    return raw_envelope(api_version, kind, message.SerializeToString())


def unwrap(body: bytes, message_class):
    """An answer read with the library alone: (typeMeta, the message)."""
    assert body.startswith(MAGIC)
    unknown = runtime_pb2.Unknown.FromString(body[len(MAGIC) :])
    return unknown.typeMeta, message_class.FromString(unknown.raw)


# What kubectl would have sent as JSON for the same command (Go's omitempty: no empty fields).
KUBECTL_AS_JSON = {
    "ns team": {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team"},
        "spec": {},
        "status": {},
    },
    "configmap cm --from-literal=a=b -n team": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "team"},
        "data": {"a": "b"},
    },
    "secret generic s --from-literal=a=b -n team": {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "team"},
        "data": {"a": "Yg=="},
    },
    "role reader --verb=get --resource=runs -n team": {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "team"},
        "rules": [{"verbs": ["get"], "apiGroups": ["kruntimes.io"], "resources": ["runs"]}],
    },
    "rolebinding rb --role=reader --user=bob -n team": {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": "team"},
        "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "bob"}],
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "reader"},
    },
    "clusterrole lister --verb=list --resource=namespaces": {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lister"},
        # the core group is the empty string: kept inside a list, where it is a value
        "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["namespaces"]}],
    },
    "clusterrolebinding crb --clusterrole=lister --user=bob": {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "crb"},
        "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "bob"}],
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "lister"},
    },
}


@pytest.mark.parametrize("command", sorted(KUBECTL_CREATE_BODIES))
def test_kubectls_create_bodies_decode_to_what_its_json_would_be(command):
    body = bytes.fromhex(KUBECTL_CREATE_BODIES[command])
    assert decode_object(body) == KUBECTL_AS_JSON[command]


def full_meta() -> meta_pb2.ObjectMeta:
    return meta_pb2.ObjectMeta(
        name="cm",
        namespace="team",
        uid="0b6c1b1e-4b8f-4e43-9d53-6b0c1c4b1a01",
        resourceVersion="42",
        generation=3,
        creationTimestamp=meta_pb2.Time(seconds=1_767_225_600),  # 2026-01-01T00:00:00Z
        deletionTimestamp=meta_pb2.Time(seconds=1_767_225_660),
        deletionGracePeriodSeconds=0,  # a pointer in Go: zero is a value
        labels={"app": "web", "empty": ""},
        annotations={"note": "x"},
        ownerReferences=[
            meta_pb2.OwnerReference(
                apiVersion="v1",
                kind="ConfigMap",
                name="owner",
                uid="u-1",
                controller=False,
                blockOwnerDeletion=True,
            )
        ],
        finalizers=["kruntimes.io/keep"],
        managedFields=[
            meta_pb2.ManagedFieldsEntry(
                manager="kubectl",
                operation="Apply",
                apiVersion="v1",
                time=meta_pb2.Time(seconds=1_767_225_600),
                fieldsType="FieldsV1",
                fieldsV1=meta_pb2.FieldsV1(Raw=b'{"f:data":{"f:a":{}}}'),
            )
        ],
    )


FULL_META_JSON = {
    "name": "cm",
    "namespace": "team",
    "uid": "0b6c1b1e-4b8f-4e43-9d53-6b0c1c4b1a01",
    "resourceVersion": "42",
    "generation": 3,
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "deletionTimestamp": "2026-01-01T00:01:00Z",
    "deletionGracePeriodSeconds": 0,
    "labels": {"app": "web", "empty": ""},
    "annotations": {"note": "x"},
    "ownerReferences": [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": "u-1",
            "controller": False,
            "blockOwnerDeletion": True,
        }
    ],
    "finalizers": ["kruntimes.io/keep"],
    "managedFields": [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}},
        }
    ],
}


def test_every_object_meta_field_decodes_and_encodes_back():
    message = core_pb2.ConfigMap(
        metadata=full_meta(),
        immutable=False,  # a pointer in Go: false is a value
        data={"a": "b"},
        binaryData={"bin": b"\x00\xff"},
    )
    expected = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": FULL_META_JSON,
        "immutable": False,
        "data": {"a": "b"},
        "binaryData": {"bin": "AP8="},
    }
    assert decode_object(envelope("v1", "ConfigMap", message)) == expected
    type_meta, again = unwrap(encode_object(expected), core_pb2.ConfigMap)
    assert (type_meta.apiVersion, type_meta.kind) == ("v1", "ConfigMap")
    assert again == message


def test_secret_bytes_and_string_data():
    message = core_pb2.Secret(
        metadata=meta_pb2.ObjectMeta(name="s"),
        data={"token": b"s3cr\xc3\xa9t"},
        stringData={"plain": "text"},
        type="kubernetes.io/basic-auth",
    )
    decoded = decode_object(envelope("v1", "Secret", message))
    assert decoded["data"] == {"token": "czNjcsOpdA=="}
    assert decoded["stringData"] == {"plain": "text"}
    assert decoded["type"] == "kubernetes.io/basic-auth"
    assert unwrap(encode_object(decoded), core_pb2.Secret)[1] == message


def test_a_cluster_role_with_its_aggregation_rule():
    message = rbac_pb2.ClusterRole(
        metadata=meta_pb2.ObjectMeta(name="agg"),
        aggregationRule=rbac_pb2.AggregationRule(
            clusterRoleSelectors=[
                meta_pb2.LabelSelector(
                    matchLabels={"rbac.example.com/aggregate": "true"},
                    matchExpressions=[
                        meta_pb2.LabelSelectorRequirement(key="k", operator="In", values=["v"])
                    ],
                )
            ]
        ),
        rules=[rbac_pb2.PolicyRule(verbs=["get"], nonResourceURLs=["/healthz"])],
    )
    decoded = decode_object(envelope(f"{RBAC}/v1", "ClusterRole", message))
    assert decoded["aggregationRule"] == {
        "clusterRoleSelectors": [
            {
                "matchLabels": {"rbac.example.com/aggregate": "true"},
                "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}],
            }
        ]
    }
    assert decoded["rules"] == [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]
    assert unwrap(encode_object(decoded), rbac_pb2.ClusterRole)[1] == message


def test_a_controller_revision_carries_its_data_as_json():
    message = apps_pb2.ControllerRevision(
        metadata=meta_pb2.ObjectMeta(name="r1"),
        data=runtime_pb2.RawExtension(raw=b'{"spec":{"replicas":2}}'),
        revision=0,  # not omitempty in Go: zero is shown
    )
    decoded = decode_object(envelope("apps/v1", "ControllerRevision", message))
    assert decoded["data"] == {"spec": {"replicas": 2}} and decoded["revision"] == 0
    assert unwrap(encode_object(decoded), apps_pb2.ControllerRevision)[1] == message


def test_a_micro_time_keeps_its_microseconds():
    message = core_pb2.Event(
        metadata=meta_pb2.ObjectMeta(name="e"),
        eventTime=meta_pb2.MicroTime(seconds=1_767_225_600, nanos=123_456_000),
        count=0,  # omitempty in Go: zero is absent
        reason="",
    )
    decoded = decode_object(envelope("v1", "Event", message))
    assert decoded == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "eventTime": "2026-01-01T00:00:00.123456Z",
    }
    again = unwrap(encode_object(decoded), core_pb2.Event)[1]
    assert again.eventTime == message.eventTime


def test_a_status_answer_reads_back_with_its_causes():
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Namespace "X" is invalid',
        "reason": "Invalid",
        "details": {
            "name": "X",
            "kind": "namespaces",
            "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "metadata.name"}],
        },
        "code": 422,
    }
    type_meta, message = unwrap(encode_object(status), meta_pb2.Status)
    assert (type_meta.apiVersion, type_meta.kind) == ("v1", "Status")
    assert message.code == 422 and message.reason == "Invalid"
    assert message.details.causes[0].field == "metadata.name"
    assert {"kind": "Status", "apiVersion": "v1", **to_dict(message)} == status


def test_kinds_only_json_answers_are_not_encoded():
    assert encode_object({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run"}) is None
    assert encode_object({"apiVersion": "meta.k8s.io/v1", "kind": "Table"}) is None
    assert encode_object(["not", "an", "object"]) is None


def test_a_value_of_the_wrong_shape_is_answered_as_json_not_a_failure():
    assert encode_object({"apiVersion": "v1", "kind": "Event", "count": "many"}) is None
    assert encode_object({"apiVersion": "v1", "kind": "Event", "eventTime": "yesterday"}) is None


def test_a_custom_kind_in_protobuf_is_refused_naming_json():
    body = envelope("kruntimes.io/v1alpha1", "Run", meta_pb2.ObjectMeta())
    with pytest.raises(UnsupportedMediaType, match="send it as application/json"):
        decode_object(body)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00k8s",
        MAGIC + b"\x0a\x05ab",  # typeMeta longer than the body
        MAGIC + b"\x0f",  # a key with wire type 7
        envelope("v1", "ConfigMap", meta_pb2.ObjectMeta())[:-3],
        raw_envelope("v1", "ConfigMap", b"\x0a\xff"),  # an envelope whose raw is no ConfigMap
        # a FieldsV1 that is not JSON
        envelope(
            "v1",
            "ConfigMap",
            core_pb2.ConfigMap(
                metadata=meta_pb2.ObjectMeta(
                    managedFields=[
                        meta_pb2.ManagedFieldsEntry(fieldsV1=meta_pb2.FieldsV1(Raw=b"{not"))
                    ]
                )
            ),
        ),
        raw_envelope("v1", "ConfigMap", b"\x0a\x03\x0a\x01\xff"),  # a name that is not UTF-8
        # a time no calendar holds
        envelope(
            "v1",
            "ConfigMap",
            core_pb2.ConfigMap(
                metadata=meta_pb2.ObjectMeta(creationTimestamp=meta_pb2.Time(seconds=2**62))
            ),
        ),
    ],
)
def test_bytes_that_are_not_a_message_are_a_bad_request(body):
    with pytest.raises(ParseError):
        decode_object(body)


@given(st.binary(max_size=200))
def test_random_bytes_are_refused_cleanly(data):
    for body in (data, MAGIC + data):
        try:
            decode_object(body)
        except APIException as refused:
            assert refused.status_code in (400, 415)


@given(st.sampled_from(sorted(OBJECTS)), st.binary(max_size=200))
def test_random_raw_of_every_kind_is_read_or_refused_cleanly(key, raw):
    try:
        decoded = decode_object(raw_envelope(key[0], key[1], raw))
    except APIException as refused:
        assert refused.status_code == 400
    else:
        assert (decoded["apiVersion"], decoded["kind"]) == key


def test_the_renderer_answers_what_it_cannot_encode_as_json():
    from rest_framework.response import Response

    from portal.machinery.protobuf import ProtobufRenderer

    response = Response()
    response["Content-Type"] = "application/vnd.kubernetes.protobuf"
    table = {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "rows": []}
    body = ProtobufRenderer().render(table, None, {"response": response})
    assert response["Content-Type"] == "application/json"
    assert body == b'{"apiVersion":"meta.k8s.io/v1","kind":"Table","rows":[]}'
