"""The protobuf bodies kubectl sends for the built-in access reviews (kubectl auth can-i)."""

from __future__ import annotations

import pytest

from portal.machinery.protobuf import MEDIA_TYPE, decode_object


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2), as Go's generated marshalers write."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def envelope(kind: str, raw: bytes) -> bytes:
    type_meta = field(1, b"authorization.k8s.io/v1") + field(2, kind.encode())
    return b"k8s\x00" + field(1, type_meta) + field(2, raw)


def access_review(**attributes: str) -> bytes:
    numbers = {
        "namespace": 1,
        "verb": 2,
        "group": 3,
        "version": 4,
        "resource": 5,
        "subresource": 6,
        "name": 7,
    }
    resource = b"".join(field(numbers[k], v.encode()) for k, v in attributes.items())
    varint_noise = bytes([8 << 3 | 0, 1])  # an unknown varint field is skipped
    return envelope(
        "SelfSubjectAccessReview", field(1, b"") + field(2, field(1, resource) + varint_noise)
    )


def test_a_self_subject_access_review_decodes_to_its_json_shape():
    body = access_review(namespace="default", verb="create", group="kruntimes.io", resource="runs")
    assert decode_object(body) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "namespace": "default",
                "verb": "create",
                "group": "kruntimes.io",
                "resource": "runs",
            }
        },
    }


def test_a_rules_review_decodes():
    body = envelope("SelfSubjectRulesReview", field(2, field(1, b"ci")))
    assert decode_object(body)["spec"] == {"namespace": "ci"}


@pytest.mark.parametrize(
    "body",
    [b"not protobuf", b"k8s\x00\x0a\x05ab", envelope("Secret", b"")],
    ids=["no magic", "truncated", "another kind"],
)
def test_anything_else_is_refused(body):
    from rest_framework.exceptions import APIException

    with pytest.raises(APIException):
        decode_object(body)


@pytest.mark.django_db
def test_kubectl_auth_can_i_over_protobuf_answers_json(admin_api, user_api):
    url = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    body = access_review(namespace="default", verb="create", group="kruntimes.io", resource="runs")
    allowed = admin_api.post(url, body, content_type=MEDIA_TYPE)
    assert allowed.status_code == 201, allowed.content
    assert allowed.json()["status"]["allowed"] is True
    denied = user_api.post(url, body, content_type=MEDIA_TYPE)
    assert denied.json()["status"]["allowed"] is False
    refused = admin_api.post(url, b"junk", content_type=MEDIA_TYPE)
    assert refused.status_code == 400 and refused.json()["kind"] == "Status"
