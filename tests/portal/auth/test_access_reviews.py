"""SelfSubjectAccessReview and SelfSubjectRulesReview (kubectl auth can-i, can-i --list),
answered for the asking user by local RBAC and by the SubjectAccessReview authorizer."""

from __future__ import annotations

import pytest

from tests.helpers.api import assert_status
from tests.helpers.rbac import bind_cluster_role, bind_role, make_cluster_role, make_role

pytestmark = pytest.mark.django_db

AUTHZ = "/apis/authorization.k8s.io/v1"
RUNS = {"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["create", "get"]}
LOGS = {"apiGroups": ["kruntimes.io"], "resources": ["runs/log"], "verbs": ["get"]}


def can_i(client, verb, resource, namespace="default", subresource="", group="kruntimes.io"):
    attributes = {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
    if subresource:
        attributes["subresource"] = subresource
    response = client.post(
        f"{AUTHZ}/selfsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["kind"] == "SelfSubjectAccessReview"
    assert body["spec"]["resourceAttributes"] == attributes  # echoed, as clients expect
    return body["status"]


def rules(client, namespace="default"):
    response = client.post(
        f"{AUTHZ}/selfsubjectrulesreviews",
        {"kind": "SelfSubjectRulesReview", "spec": {"namespace": namespace}},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return response.json()["status"]


@pytest.fixture
def alice_runs_in_default(admin_api):
    make_role(admin_api, "runner", [RUNS, LOGS])
    bind_role(admin_api, "alice-runs", "Role", "runner")


def test_an_allowed_and_a_denied_user(
    admin_api, user_api, alice_runs_in_default, django_user_model
):
    from tests.helpers.api import token_client

    status = can_i(user_api, "create", "runs")
    assert status["allowed"] is True and "RoleBinding" in status["reason"]
    bob = token_client(django_user_model.objects.create_user("bob"))
    assert can_i(bob, "create", "runs") == {"allowed": False, "reason": "no RBAC rule matched"}


def test_namespaced_grant_is_not_cluster_wide(user_api, alice_runs_in_default):
    assert can_i(user_api, "get", "runs", namespace="default")["allowed"]
    assert not can_i(user_api, "get", "runs", namespace="other")["allowed"]
    assert not can_i(user_api, "get", "runs", namespace="")["allowed"]  # --all-namespaces


def test_cluster_wide_grant(admin_api, user_api):
    make_cluster_role(admin_api, "run-reader", [RUNS])
    bind_cluster_role(admin_api, "alice-reads", "run-reader")
    assert can_i(user_api, "get", "runs", namespace="")["allowed"]
    assert can_i(user_api, "get", "runs", namespace="elsewhere")["allowed"]


def test_a_subresource(user_api, alice_runs_in_default):
    assert can_i(user_api, "get", "runs", subresource="log")["allowed"]
    assert not can_i(user_api, "get", "runtimes", subresource="log")["allowed"]
    assert not can_i(user_api, "create", "runs", subresource="log")["allowed"]


def test_non_resource_attributes(user_api):
    response = user_api.post(
        f"{AUTHZ}/selfsubjectaccessreviews",
        {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/apis"}}},
        format="json",
    )
    assert response.json()["status"]["allowed"] is True
    response = user_api.post(
        f"{AUTHZ}/selfsubjectaccessreviews",
        {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/metrics"}}},
        format="json",
    )
    assert response.json()["status"]["allowed"] is False


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.resourceAttributes"),
        (
            {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/"}},
            "spec.resourceAttributes",
        ),
        ({"resourceAttributes": {"verb": 7}}, "spec.resourceAttributes.verb"),
        ({"resourceAttributes": {"verb": "get", "colour": "x"}}, "spec.resourceAttributes.colour"),
    ],
)
def test_a_bad_access_review_is_invalid(user_api, spec, field):
    response = user_api.post(f"{AUTHZ}/selfsubjectaccessreviews", {"spec": spec}, format="json")
    body = assert_status(response, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == field


def test_no_spec_is_invalid(user_api):
    body = assert_status(
        user_api.post(
            f"{AUTHZ}/selfsubjectrulesreviews", {"kind": "SelfSubjectRulesReview"}, format="json"
        ),
        422,
        "Invalid",
    )
    assert body["details"]["causes"][0]["field"] == "spec"


def test_reviews_are_create_only_and_need_a_user(user_api, anon_api):
    assert_status(user_api.get(f"{AUTHZ}/selfsubjectaccessreviews"), 405, "MethodNotAllowed")
    response = anon_api.post(f"{AUTHZ}/selfsubjectaccessreviews", {"spec": {}}, format="json")
    assert_status(response, 401, "Unauthorized")


def test_rules_review_lists_namespace_and_cluster_rules(admin_api, user_api, alice_runs_in_default):
    make_cluster_role(
        admin_api,
        "ns-reader",
        [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}],
    )
    bind_cluster_role(admin_api, "alice-ns", "ns-reader")
    status = rules(user_api)
    resources = {tuple(r["resources"]): r["verbs"] for r in status["resourceRules"]}
    assert resources[("runs",)] == ["create", "get"]
    assert resources[("runs/log",)] == ["get"]
    assert resources[("namespaces",)] == ["list"]
    assert resources[("selfsubjectaccessreviews", "selfsubjectrulesreviews")] == ["create"]
    assert status["incomplete"] is False
    assert any("/apis" in r["nonResourceURLs"] for r in status["nonResourceRules"])
    elsewhere = {tuple(r["resources"]) for r in rules(user_api, "other")["resourceRules"]}
    assert ("runs",) not in elsewhere and ("namespaces",) in elsewhere


def test_rules_review_of_a_user_without_grants(django_user_model):
    from tests.helpers.api import token_client

    bob = token_client(django_user_model.objects.create_user("bob"))
    status = rules(bob)
    assert [r["resources"] for r in status["resourceRules"]] == [
        ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
        ["selfsubjectreviews"],  # kubectl auth whoami
    ]


def test_rules_review_of_an_administrator(admin_api):
    assert rules(admin_api)["resourceRules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    ]


def test_discovery_serves_the_reviews(user_api):
    body = user_api.get(AUTHZ).json()
    assert {(r["name"], tuple(r["verbs"]), r["namespaced"]) for r in body["resources"]} == {
        ("selfsubjectaccessreviews", ("create",), False),
        ("selfsubjectrulesreviews", ("create",), False),
    }
    groups = {g["name"] for g in user_api.get("/apis").json()["groups"]}
    assert "authorization.k8s.io" in groups


def test_subject_access_review_authorizer_answers_access_reviews(
    user_api, sar_backend, access_reviews
):
    access_reviews.allow("allowed by the cluster")
    assert can_i(user_api, "create", "runs") == {
        "allowed": True,
        "reason": "allowed by the cluster",
    }
    sent = access_reviews.bodies[-1]["spec"]
    assert sent["user"] == "alice" and sent["resourceAttributes"]["resource"] == "runs"
    access_reviews.deny("frozen")
    status = can_i(user_api, "create", "runs")
    assert (status["allowed"], status["reason"]) == (False, "frozen")


def test_subject_access_review_authorizer_rules_are_incomplete(user_api, sar_backend):
    status = rules(user_api)
    assert status["incomplete"] is True
    assert "cannot list rules" in status["evaluationError"]
    # what the portal itself serves every authenticated user is still known
    assert status["resourceRules"][0]["resources"] == [
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
    ]
