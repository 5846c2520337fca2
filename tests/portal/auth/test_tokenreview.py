"""ServiceAccount bearer tokens authenticated by the cluster's TokenReview, over HTTP against
kmock's Kubernetes emulator, then authorized as the ServiceAccount by RBAC or the cluster."""

from __future__ import annotations

import logging
import time

import pytest
from rest_framework.test import APIClient

from portal.auth import tokenreview
from portal.auth.authorizer import UserInfo
from tests.helpers.api import assert_status, token_client
from tests.helpers.kube import ScriptedAccessReviews, service_account
from tests.helpers.rbac import bind_role, make_role

pytestmark = pytest.mark.django_db

WIDGETS = "/apis/testing.kruntimes.io/v1/namespaces/default/widgets"
READ_WIDGETS = [
    {"apiGroups": ["testing.kruntimes.io"], "resources": ["widgets"], "verbs": ["get", "list"]}
]
# A ServiceAccount token is a JWT: three base64url segments
SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJl"
OTHER_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvdGhlciJ9.b3RoZXI"
BUILDER = service_account("ci", "builder", uid="sa-uid-1")
BUILDER_SUBJECT = [{"kind": "ServiceAccount", "name": "builder", "namespace": "ci"}]


def bearer(token: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api


@pytest.fixture
def widget_reader(admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)


def test_a_service_account_token_is_authorized_as_the_service_account_by_rbac(
    token_reviews, admin_api, widget_reader
):
    token_reviews.accept(SA_TOKEN, BUILDER)
    sa = bearer(SA_TOKEN)

    denied = assert_status(sa.get(WIDGETS), 403, "Forbidden")
    assert 'User "system:serviceaccount:ci:builder" cannot list' in denied["message"]

    bind_role(admin_api, "builder-reads", "Role", "widget-reader", subjects=BUILDER_SUBJECT)
    assert sa.get(WIDGETS).status_code == 200
    assert token_reviews.bodies[0] == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": SA_TOKEN},
    }


def test_the_groups_of_the_review_are_the_users_groups(token_reviews, admin_api, widget_reader):
    token_reviews.accept(SA_TOKEN, BUILDER)
    namespace_group = [
        {
            "kind": "Group",
            "name": "system:serviceaccounts:ci",
            "apiGroup": "rbac.authorization.k8s.io",
        }
    ]
    bind_role(admin_api, "ci-reads", "Role", "widget-reader", subjects=namespace_group)

    assert bearer(SA_TOKEN).get(WIDGETS).status_code == 200


def test_the_subject_access_review_asks_about_the_service_account(
    token_reviews, sar_backend, access_reviews: ScriptedAccessReviews
):
    token_reviews.accept(SA_TOKEN, BUILDER)
    access_reviews.allow()

    assert bearer(SA_TOKEN).get(WIDGETS).status_code == 200

    spec = access_reviews.bodies[-1]["spec"]
    assert spec["user"] == "system:serviceaccount:ci:builder"
    assert spec["uid"] == "sa-uid-1"
    assert spec["groups"] == BUILDER["groups"]
    assert spec["extra"] == BUILDER["extra"]


def test_a_token_the_cluster_does_not_accept_is_401(token_reviews, caplog):
    token_reviews.accept(SA_TOKEN, BUILDER)

    with caplog.at_level(logging.DEBUG):
        response = bearer(OTHER_TOKEN).get(WIDGETS)

    status = assert_status(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"] == 'Bearer realm="kruntimes"'
    assert OTHER_TOKEN not in response.content.decode()
    assert OTHER_TOKEN not in caplog.text
    assert "not accepted" in status["message"]


def test_the_portals_own_tokens_are_not_sent_to_the_cluster(token_reviews, user, widget_reader):
    response = token_client(user).get(WIDGETS)

    assert response.status_code == 403  # authenticated as alice, who holds no binding
    assert token_reviews.bodies == []


def test_off_the_cluster_a_jwt_is_no_token_of_the_portal(token_reviews, settings):
    settings.KRUNTIMES_TOKEN_REVIEW = False
    token_reviews.accept(SA_TOKEN, BUILDER)

    assert_status(bearer(SA_TOKEN).get(WIDGETS), 401, "Unauthorized")
    assert token_reviews.bodies == []


def test_answers_are_reused_for_a_bounded_time(token_reviews, settings, admin_api, widget_reader):
    settings.KRUNTIMES_TOKEN_REVIEW_CACHE_SECONDS = 0.5
    bind_role(admin_api, "builder-reads", "Role", "widget-reader", subjects=BUILDER_SUBJECT)
    token_reviews.accept(SA_TOKEN, BUILDER)
    sa = bearer(SA_TOKEN)

    assert sa.get(WIDGETS).status_code == 200
    token_reviews.revoke(SA_TOKEN)
    assert sa.get(WIDGETS).status_code == 200  # the cached answer
    assert len(token_reviews.bodies) == 1

    time.sleep(0.6)
    assert_status(sa.get(WIDGETS), 401, "Unauthorized")  # asked again once it expired
    assert_status(sa.get(WIDGETS), 401, "Unauthorized")  # a refusal is cached too
    assert len(token_reviews.bodies) == 2


def test_no_cache_asks_every_time(token_reviews, settings):
    settings.KRUNTIMES_TOKEN_REVIEW_CACHE_SECONDS = 0
    for _ in range(2):
        assert_status(bearer(OTHER_TOKEN).get(WIDGETS), 401, "Unauthorized")
    assert len(token_reviews.bodies) == 2


def test_the_cache_is_bounded_and_keyed_by_digest():
    cache = tokenreview.ReviewCache(size=2)
    keys = [tokenreview.cache_key(f"token-{n}", ()) for n in range(3)]
    for key in keys:
        cache.put(key, tokenreview.Review(UserInfo(username=key)), ttl=60)

    assert len(cache) == 2
    assert cache.get(keys[0]) is None  # the oldest went first
    assert cache.get(keys[2]) is not None
    assert "token-2" not in keys[2]
    assert tokenreview.cache_key("t", ("a",)) != tokenreview.cache_key("t", ())


def test_an_unreachable_api_server_is_503_and_not_cached(
    token_reviews, kube_emulator, settings, caplog, admin_api, widget_reader
):
    bind_role(admin_api, "builder-reads", "Role", "widget-reader", subjects=BUILDER_SUBJECT)
    token_reviews.accept(SA_TOKEN, BUILDER)
    settings.KRUNTIMES_KUBERNETES_HOST = "http://127.0.0.1:9"  # discard port: nothing listens
    settings.KRUNTIMES_TOKEN_REVIEW_TIMEOUT_SECONDS = 0.5

    with caplog.at_level(logging.DEBUG):
        response = bearer(SA_TOKEN).get(WIDGETS)

    status = assert_status(response, 503, "ServiceUnavailable")
    assert "cannot reach the Kubernetes API" in status["message"]
    assert SA_TOKEN not in response.content.decode()
    assert SA_TOKEN not in caplog.text
    assert "TokenReview failed" in caplog.text

    settings.KRUNTIMES_KUBERNETES_HOST = kube_emulator.url  # back: the failure was not kept
    assert bearer(SA_TOKEN).get(WIDGETS).status_code == 200


@pytest.mark.parametrize("code", [500, 503])
def test_an_api_server_error_is_503(token_reviews, code):
    token_reviews.fail(code)

    status = assert_status(bearer(SA_TOKEN).get(WIDGETS), 503, "ServiceUnavailable")
    assert f"HTTP {code}" in status["message"]


def test_an_answer_without_status_is_503(kube_emulator, settings):
    settings.KRUNTIMES_KUBERNETES_HOST = kube_emulator.url
    settings.KRUNTIMES_TOKEN_REVIEW = True
    tokenreview.cache.clear()
    kube_emulator.emulator["post /apis/authentication.k8s.io/v1/tokenreviews"] << (
        lambda request: {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    )

    assert_status(bearer(SA_TOKEN).get(WIDGETS), 503, "ServiceUnavailable")


def test_audiences_are_asked_for_and_checked(token_reviews, settings, admin_api, widget_reader):
    settings.KRUNTIMES_TOKEN_AUDIENCES = ["kruntimes-portal"]
    bind_role(admin_api, "builder-reads", "Role", "widget-reader", subjects=BUILDER_SUBJECT)
    token_reviews.accept(SA_TOKEN, BUILDER)  # the requested audiences echoed
    token_reviews.accept(OTHER_TOKEN, BUILDER, audiences=["https://kubernetes.default.svc"])

    assert bearer(SA_TOKEN).get(WIDGETS).status_code == 200
    assert token_reviews.bodies[0]["spec"]["audiences"] == ["kruntimes-portal"]
    assert_status(bearer(OTHER_TOKEN).get(WIDGETS), 401, "Unauthorized")
