"""In a cluster the gateway asks what the API asks: ServiceAccount tokens are authenticated by
TokenReview and decisions come from SubjectAccessReview when the API is so configured (both
against the in-repo Kubernetes emulator, over HTTP)."""

from __future__ import annotations

import base64
import json

import pytest

from scheduling.gateway import access
from tests.helpers.kube import service_account

from .test_invoke import assert_failure

pytestmark = pytest.mark.django_db(transaction=True)


def service_account_token(subject: str) -> str:
    payload = base64.urlsafe_b64encode(json.dumps({"sub": subject}).encode()).rstrip(b"=")
    return f"eyJhbGciOiJSUzI1NiJ9.{payload.decode()}.c2lnbmF0dXJl"


def test_subject_access_review_decides_when_the_api_uses_it(world, sar_backend, access_reviews):
    access_reviews.allow('RBAC: allowed by RoleBinding "invokers"')
    assert world.invoke(token=world.bob).status_code == 200  # bob has only view locally
    spec = access_reviews.bodies[-1]["spec"]
    assert spec["user"] == "bob"
    assert spec["resourceAttributes"] == {
        "namespace": "team-a",
        "verb": "create",
        "group": "kruntimes.io",
        "resource": "runs",
        "subresource": "invoke",
        "name": "fn",
    } | {k: v for k, v in spec["resourceAttributes"].items() if k == "version"}

    asked = len(access_reviews.requests)
    assert world.invoke(token=world.bob).status_code == 200
    assert len(access_reviews.requests) == asked  # the decision is remembered

    access_reviews.deny("invocations are frozen")
    access.clear()
    body = assert_failure(world.invoke(token=world.bob), 403, "Forbidden")
    assert body["message"].endswith("invocations are frozen")


def test_a_service_account_token_is_judged_by_token_review(
    world, sar_backend, access_reviews, token_reviews
):
    token = service_account_token("invoker")
    token_reviews.accept(token, service_account("team-a", "agent"))
    access_reviews.allow()
    assert world.invoke(token=token).status_code == 200
    assert access_reviews.bodies[-1]["spec"]["user"] == "system:serviceaccount:team-a:agent"
    assert world.invoke(token=token).status_code == 200
    assert len(token_reviews.requests) == 1  # remembered by digest

    assert_failure(world.invoke(token=service_account_token("stranger")), 401, "Unauthorized")


def test_a_token_review_that_cannot_be_asked_is_503_and_not_remembered(world, token_reviews):
    token = service_account_token("agent")
    token_reviews.fail(500)
    response = world.invoke(token=token)
    assert_failure(response, 503, "ServiceUnavailable")
    assert len(access.identities) == 0
