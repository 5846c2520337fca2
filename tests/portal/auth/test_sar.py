"""The SubjectAccessReview authorizer, over HTTP against kmock's Kubernetes emulator."""

from __future__ import annotations

import json
import logging
import time

import pytest

from portal.auth.authorizer import ResourceAttributes, UserInfo
from portal.auth.sar import SubjectAccessReviewAuthorizer

ALICE = UserInfo(
    username="alice",
    uid="42",
    groups=("devs", "system:authenticated"),
    extra={"scopes.example.com": ["read", "write"]},
)
UPDATE_STATUS = ResourceAttributes(
    verb="update",
    group="testing.kruntimes.io",
    resource="widgets",
    subresource="status",
    namespace="default",
    name="w1",
    version="v1",
)


def review(user=ALICE, attrs=UPDATE_STATUS):
    return SubjectAccessReviewAuthorizer().review(user, attrs)


def test_allowed(access_reviews):
    access_reviews.allow('RBAC: allowed by ClusterRoleBinding "ops"')

    decision = review()

    assert decision.allowed
    assert decision.reason == 'RBAC: allowed by ClusterRoleBinding "ops"'


def test_denied_with_reason(access_reviews):
    access_reviews.deny("widgets are frozen")

    decision = review()

    assert not decision.allowed
    assert decision.reason == "widgets are frozen"


def test_no_opinion_denies(access_reviews):
    access_reviews.deny(no_opinion=True)

    decision = review()

    assert not decision.allowed
    assert decision.reason


def test_sends_user_and_resource_attributes(access_reviews):
    review()

    assert access_reviews.bodies == [
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "alice",
                "uid": "42",
                "groups": ["devs", "system:authenticated"],
                "extra": {"scopes.example.com": ["read", "write"]},
                "resourceAttributes": {
                    "namespace": "default",
                    "verb": "update",
                    "group": "testing.kruntimes.io",
                    "version": "v1",
                    "resource": "widgets",
                    "subresource": "status",
                    "name": "w1",
                },
            },
        }
    ]


def test_empty_attributes_are_omitted(access_reviews):
    collection = ResourceAttributes(verb="list", group="", resource="namespaces")

    review(UserInfo(username="alice"), collection)

    assert access_reviews.bodies[0]["spec"] == {
        "user": "alice",
        "resourceAttributes": {"verb": "list", "resource": "namespaces"},
    }


def test_each_review_is_asked_anew(access_reviews, kube_emulator):
    access_reviews.allow()
    assert review().allowed
    access_reviews.deny("changed my mind")

    # plain kmock stores the first review and answers 409 to the second; the harness must not
    assert not review().allowed
    assert len(access_reviews.bodies) == 2
    assert not kube_emulator.emulator.objects


@pytest.mark.parametrize("code", [500, 503])
def test_server_error_fails_closed(access_reviews, code, caplog):
    access_reviews.fail(code)

    with caplog.at_level(logging.WARNING, logger="portal.auth.sar"):
        decision = review()

    assert not decision.allowed
    assert decision.reason.startswith("authorization check failed: ")
    assert str(code) in decision.reason
    assert "SubjectAccessReview for alice update widgets failed" in caplog.text


def test_timeout_fails_closed(access_reviews, settings, caplog):
    settings.KRUNTIMES_SAR_TIMEOUT_SECONDS = 0.2
    access_reviews.hold()

    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="portal.auth.sar"):
        decision = review()
    elapsed = time.monotonic() - started

    assert not decision.allowed
    assert decision.reason == "authorization check failed: no answer within 0.2s"
    assert elapsed < 2.0
    assert len(access_reviews.bodies) == 1  # a POST is not retried after a read timeout
    assert "failed; denying" in caplog.text


def test_unreachable_server_fails_closed(settings):
    settings.KRUNTIMES_KUBERNETES_HOST = "http://127.0.0.1:9"  # discard port: nothing listens
    settings.KRUNTIMES_SAR_TIMEOUT_SECONDS = 0.5

    decision = review()

    assert not decision.allowed
    assert decision.reason.startswith("authorization check failed: cannot reach the Kubernetes API")


def test_kubeconfig_from_settings(access_reviews, kube_emulator, settings, tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "emulator",
                "clusters": [{"name": "emulator", "cluster": {"server": kube_emulator.url}}],
                "users": [{"name": "portal", "user": {"token": "portal-token"}}],
                "contexts": [
                    {"name": "emulator", "context": {"cluster": "emulator", "user": "portal"}}
                ],
            }
        )
    )
    settings.KRUNTIMES_KUBERNETES_HOST = None
    settings.KRUNTIMES_KUBECONFIG = str(kubeconfig)
    access_reviews.allow()

    assert review().allowed
    assert access_reviews.requests[0].headers["Authorization"] == "Bearer portal-token"


def test_answer_without_status_fails_closed(kube_emulator, settings):
    settings.KRUNTIMES_KUBERNETES_HOST = kube_emulator.url
    kube_emulator.emulator["post /apis/authorization.k8s.io/v1/subjectaccessreviews"] << (
        lambda request: {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": request.data["spec"],
        }
    )

    decision = review()

    assert not decision.allowed
    assert decision.reason.startswith("authorization check failed: ")


WIDGETS = "/apis/testing.kruntimes.io/v1/namespaces/default/widgets"


@pytest.mark.django_db
def test_rest_api_asks_the_cluster(sar_backend, access_reviews, user_api, user):
    access_reviews.allow()
    assert user_api.get(WIDGETS).status_code == 200

    access_reviews.deny("widgets are frozen")
    response = user_api.get(WIDGETS)

    assert response.status_code == 403
    status = response.json()
    assert status["reason"] == "Forbidden"
    assert status["message"].endswith(": widgets are frozen")
    assert access_reviews.bodies[-1]["spec"] == {
        "user": "alice",
        "uid": str(user.pk),
        "groups": ["system:authenticated"],
        "resourceAttributes": {
            "namespace": "default",
            "verb": "list",
            "group": "testing.kruntimes.io",
            "version": "v1",
            "resource": "widgets",
        },
    }


@pytest.mark.django_db
def test_rest_api_fails_closed(sar_backend, access_reviews, user_api):
    access_reviews.fail(500)

    response = user_api.get(WIDGETS)

    assert response.status_code == 403
    assert "authorization check failed" in response.json()["message"]


@pytest.mark.django_db
def test_rest_api_superuser_needs_no_review(sar_backend, access_reviews, admin_api):
    access_reviews.fail(500)

    assert admin_api.get(WIDGETS).status_code == 200
    assert access_reviews.bodies == []


def test_a_budget_shortens_the_wait(access_reviews, settings):
    from portal.auth.authorizer import budget

    settings.KRUNTIMES_SAR_TIMEOUT_SECONDS = 30.0
    access_reviews.hold()

    started = time.monotonic()
    with budget(0.3):
        decision = review()

    assert not decision.allowed
    assert decision.reason == "authorization check failed: no answer within 0.3s"
    assert time.monotonic() - started < 2.0


def test_a_spent_budget_denies_without_asking(access_reviews):
    from portal.auth.authorizer import budget

    with budget(0):
        decision = review()

    assert not decision.allowed and access_reviews.bodies == []
