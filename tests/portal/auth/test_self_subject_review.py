"""``authentication.k8s.io/v1`` SelfSubjectReview (``kubectl auth whoami``): the asking user's
UserInfo, answered to every authenticated user (kube's system:basic-user) and never stored."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.helpers.api import assert_status

pytestmark = pytest.mark.django_db

URL = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
BODY = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def whoami(client, body=BODY) -> dict:
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    answer = response.json()
    assert (answer["apiVersion"], answer["kind"]) == (
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
    )
    return answer["status"]["userInfo"]


def test_a_token_user_is_told_who_they_are(user_api, user, django_user_model):
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.create(name="runners"))
    info = whoami(user_api)
    assert info == {
        "username": "alice",
        "uid": str(user.pk),
        "groups": ["runners", "system:authenticated"],
    }


def test_a_session_user_is_told_who_they_are(user):
    client = APIClient()
    assert client.login(username="alice", password="pw")
    assert whoami(client)["username"] == "alice"


def test_a_cluster_authenticated_user_keeps_its_extra():
    from portal.auth.attributes import UserInfo
    from portal.auth.tokenreview import ClusterUser

    client = APIClient()
    info = UserInfo(
        "system:serviceaccount:ci:bot", "u-1", ("system:serviceaccounts",), {"k": ["v"]}
    )
    client.force_authenticate(ClusterUser(info))
    assert whoami(client) == {
        "username": "system:serviceaccount:ci:bot",
        "uid": "u-1",
        "groups": ["system:serviceaccounts"],
        "extra": {"k": ["v"]},
    }


def test_anonymous_is_401(anon_api):
    assert_status(anon_api.post(URL, BODY, format="json"), 401, "Unauthorized")


def test_no_permission_is_needed_and_the_rules_say_so(user_api):
    """alice has no RBAC grant at all; kube lets every authenticated user ask."""
    rules = user_api.post(
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}},
        format="json",
    ).json()["status"]["resourceRules"]
    assert any(
        "authentication.k8s.io" in r["apiGroups"]
        and "selfsubjectreviews" in r["resources"]
        and r["verbs"] == ["create"]
        for r in rules
    ), rules
    assert whoami(user_api)["username"] == "alice"


def test_nothing_is_written(user_api):
    user_api.post(URL, BODY, format="json")  # the token's first use may touch its row
    with CaptureQueriesContext(connection) as queries:
        whoami(user_api)
    writes = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []


def test_metadata_is_echoed_and_a_wrong_kind_refused(user_api):
    response = user_api.post(URL, {**BODY, "metadata": {"name": "me"}}, format="json")
    assert response.json()["metadata"]["name"] == "me"
    body = assert_status(
        user_api.post(URL, {**BODY, "kind": "TokenReview"}, format="json"), 400, "BadRequest"
    )
    assert body["details"]["causes"][0]["field"] == "kind"


def test_an_empty_body_is_enough(user_api):
    """kubectl sends only apiVersion, kind and an empty status."""
    assert whoami(user_api, {})["username"] == "alice"
    assert whoami(user_api, {**BODY, "status": {"userInfo": {}}})["username"] == "alice"


def test_discovery_lists_it_create_only(user_api):
    groups = {g["name"] for g in user_api.get("/apis").json()["groups"]}
    assert "authentication.k8s.io" in groups
    resources = user_api.get("/apis/authentication.k8s.io/v1").json()["resources"]
    review = next(r for r in resources if r["name"] == "selfsubjectreviews")
    assert review == {
        "name": "selfsubjectreviews",
        "singularName": "selfsubjectreview",
        "namespaced": False,
        "kind": "SelfSubjectReview",
        "verbs": ["create"],
    }


def test_kubectls_protobuf_body_is_read(user_api):
    """kubectl encodes built-in kinds as protobuf: k8s\\x00 + runtime.Unknown{typeMeta, raw}."""

    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2, len(payload)]) + payload

    type_meta = field(1, b"authentication.k8s.io/v1") + field(2, b"SelfSubjectReview")
    raw = field(1, field(1, b"me")) + field(2, field(1, b""))  # metadata.name, an empty status
    response = user_api.generic(
        "POST",
        URL,
        b"k8s\x00" + field(1, type_meta) + field(2, raw),
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert response.status_code == 201, response.content
    assert response.json()["metadata"]["name"] == "me"
    assert response.json()["status"]["userInfo"]["username"] == "alice"


def test_an_impersonated_request_is_told_who_it_acts_as(admin_api):
    """``kubectl auth whoami --as bob --as-group devs``: the user the request runs as."""
    response = admin_api.post(
        URL, BODY, format="json", HTTP_IMPERSONATE_USER="bob", HTTP_IMPERSONATE_GROUP="devs"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["status"]["userInfo"] == {
        "username": "bob",
        "groups": ["devs", "system:authenticated"],
    }
