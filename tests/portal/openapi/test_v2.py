"""``/openapi/v2``: answered in the gnostic protobuf kubectl asks for (with kube-openapi's
content type, which Go's mime parser reads), and as JSON otherwise; it names no definitions,
so kubectl skips client-side validation and keeps its compiled-in patch strategies."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

KUBECTL_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def test_kubectl_gets_a_protobuf_document_it_can_parse(admin_api):
    response = admin_api.get("/openapi/v2", HTTP_ACCEPT=KUBECTL_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    body = response.content
    # field 1 (swagger), length-delimited, "2.0"; nothing else
    assert body[0] == (1 << 3 | 2) and body[2 : 2 + body[1]] == b"2.0"
    assert len(body) == 2 + body[1]


def test_json_is_answered_to_any_other_accept(admin_api):
    response = admin_api.get("/openapi/v2", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    document = json.loads(response.content)
    assert document["swagger"] == "2.0" and document["definitions"] == {}


def test_it_needs_authentication(client):
    assert client.get("/openapi/v2").status_code == 401
