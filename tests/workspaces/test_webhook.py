"""The validating admission webhook over HTTP: AdmissionReviews for Run CREATE answered with
the store's own workspace check, the uid echoed, never a 500."""

from __future__ import annotations

import json
import time

import pytest

from portal.machinery import store
from tests.helpers.api import token_client
from tests.helpers.operator import OPERATOR
from tests.helpers.workspace_access import (
    grant_use,
    kind_rbac,
    make_role,
    make_workflow_run,
    owned_by,
    workspace_run,
)
from tests.helpers.workspaces import make_workspace

pytestmark = pytest.mark.django_db

URL = "/apis/admission.kruntimes.io/v1/validate"
ALICE = {"username": "alice", "uid": "42", "groups": ["devs", "system:authenticated"]}


def admission_review(obj=None, operation="CREATE", user=ALICE, uid="uid-1", **request) -> dict:
    req = {
        "uid": uid,
        "kind": {"group": "kruntimes.io", "version": "v1alpha1", "kind": "Run"},
        "resource": {"group": "kruntimes.io", "version": "v1alpha1", "resource": "runs"},
        "namespace": "default",
        "operation": operation,
        "userInfo": user,
        "object": workspace_run() if obj is None else obj,
        **request,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


@pytest.fixture
def apiserver(admin_user):
    """The caller: a portal user allowed to ask what others may do (here a superuser)."""
    return token_client(admin_user)


def post(client, body) -> dict:
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    response = client.post(URL, raw, content_type="application/json")
    assert response.status_code == 200, response.content
    review = response.json()
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    return review["response"]


def test_allowed_with_use(apiserver, user):
    make_workspace("ws")
    grant_use(["ws"])

    response = post(apiserver, admission_review(uid="abc"))

    assert response == {"uid": "abc", "allowed": True}


def test_denied_without_use(apiserver):
    make_workspace("ws")

    response = post(apiserver, admission_review(uid="abc"))

    assert response["uid"] == "abc" and response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["reason"] == "Forbidden"
    assert (
        'User "alice" cannot use resource "persistentworkspaces/use"'
        in (response["status"]["message"])
    )


def test_use_for_another_workspace_is_denied(apiserver):
    make_workspace("ws")
    make_workspace("other")
    grant_use(["other"])

    assert post(apiserver, admission_review())["allowed"] is False


def test_missing_workspace_is_invalid(apiserver):
    response = post(apiserver, admission_review(workspace_run(workspace="nope")))

    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert 'persistentworkspaces.kruntimes.io "nope" not found' in response["status"]["message"]


def test_runtime_mismatch_is_invalid(apiserver):
    make_workspace("ws", runtime="python")

    response = post(apiserver, admission_review())

    assert response["allowed"] is False and response["status"]["code"] == 422


def test_groups_from_user_info_are_used(apiserver):
    """The request's userInfo is the subject: a Role bound to its group allows."""

    make_workspace("ws")
    rule = {
        "apiGroups": ["kruntimes.io"],
        "resources": ["persistentworkspaces/use"],
        "verbs": ["use"],
    }
    make_role("devs-use", [rule])
    store.create(
        kind_rbac("RoleBinding"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "devs-use", "namespace": "default"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "devs-use",
            },
            "subjects": [{"kind": "Group", "name": "devs"}],
        },
        context=OPERATOR,
    )

    assert post(apiserver, admission_review())["allowed"] is True
    bob = {"username": "bob", "groups": ["system:authenticated"]}
    assert post(apiserver, admission_review(user=bob))["allowed"] is False


def test_a_run_without_workspace_and_other_operations_are_allowed(apiserver):
    plain = workspace_run()
    del plain["spec"]["workspace"]

    assert post(apiserver, admission_review(plain))["allowed"] is True
    assert post(apiserver, admission_review(operation="UPDATE"))["allowed"] is True
    assert post(apiserver, admission_review(operation="DELETE", object=None))["allowed"] is True


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"resource": {"group": "", "version": "v1", "resource": "pods"}}, id="pods"),
        pytest.param({"subResource": "status"}, id="subresource"),
        pytest.param({"object": "not a run"}, id="object-not-an-object"),
        pytest.param({"object": {"spec": []}}, id="spec-not-an-object"),
        pytest.param({"userInfo": None}, id="no-user"),
        pytest.param({"userInfo": {"username": "a", "groups": "devs"}}, id="groups-not-a-list"),
        pytest.param({"namespace": ""}, id="no-namespace"),
        pytest.param({"object": {"spec": {"workspace": {"name": 3}}}}, id="bad-reference"),
        pytest.param({"object": {"spec": {"workspace": "ws"}}}, id="reference-not-an-object"),
    ],
)
def test_malformed_requests_with_a_uid_are_refused(apiserver, change):
    make_workspace("ws")
    grant_use(["ws"])
    body = admission_review(uid="u-7")
    body["request"].update(change)
    response = post(apiserver, body)

    assert response["uid"] == "u-7" and response["allowed"] is False
    assert response["status"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param(json.dumps([1, 2]), id="not-an-object"),
        pytest.param(json.dumps({"apiVersion": "v1", "kind": "Status"}), id="wrong-kind"),
        pytest.param(
            json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}),
            id="v1beta1",
        ),
        pytest.param(
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
            id="no-request",
        ),
        pytest.param(
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}
            ),
            id="no-uid",
        ),
        pytest.param('{"a": 1, "a": 2}', id="duplicate-keys"),
        pytest.param("", id="empty"),
    ],
)
def test_unreadable_reviews_are_400(apiserver, body):
    response = apiserver.post(URL, body, content_type="application/json")

    assert response.status_code == 400, response.content
    status = response.json()
    assert (status["kind"], status["reason"]) == ("Status", "BadRequest")


def test_a_huge_body_is_400(apiserver, settings):
    settings.KRUNTIMES_MAX_REQUEST_BYTES = 1024
    body = admission_review(workspace_run(source={"inline": "x" * 4096}))

    response = apiserver.post(URL, json.dumps(body), content_type="application/json")

    assert response.status_code == 400
    assert "larger than 1024 bytes" in response.json()["message"]


def test_an_unexpected_failure_is_a_refusal_not_a_500(apiserver, monkeypatch):
    from workspaces import webhook

    def boom(*args):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(webhook, "admit", boom)

    response = post(apiserver, admission_review(uid="u-9"))

    assert response["uid"] == "u-9" and response["allowed"] is False
    assert response["status"]["code"] == 500


def test_the_webhook_needs_a_token(anon_api):
    response = anon_api.post(URL, json.dumps(admission_review()), content_type="application/json")

    assert response.status_code == 401


def test_the_caller_must_be_allowed_to_ask_for_others(user_api):
    response = user_api.post(URL, json.dumps(admission_review()), content_type="application/json")

    assert response.status_code == 403
    assert "subjectaccessreviews" in response.json()["message"]


# ------------------------------------------------------------------ the workflow controller

SERVICE_ACCOUNT = "system:serviceaccount:kruntimes-system:kruntimes-controller"


def test_the_configured_controller_service_account_takes_the_child_run_path(apiserver, settings):
    settings.KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME = SERVICE_ACCOUNT
    wfr = make_workflow_run()
    make_workspace("ws", **owned_by(wfr))
    controller = {"username": SERVICE_ACCOUNT, "groups": ["system:serviceaccounts"]}
    child = workspace_run(metadata=owned_by(wfr))

    assert post(apiserver, admission_review(child, user=controller))["allowed"] is True
    # the same proof from anyone else is the normal review
    assert post(apiserver, admission_review(child))["allowed"] is False
    # and the service account's other Runs too
    other = workspace_run(metadata=owned_by(wfr, job="deploy"))
    assert post(apiserver, admission_review(other, user=controller))["allowed"] is False


def test_without_a_configured_service_account_nobody_takes_it(apiserver, settings):
    settings.KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME = ""
    wfr = make_workflow_run()
    make_workspace("ws", **owned_by(wfr))
    controller = {"username": SERVICE_ACCOUNT, "groups": ["system:serviceaccounts"]}

    review = admission_review(workspace_run(metadata=owned_by(wfr)), user=controller)
    assert post(apiserver, review)["allowed"] is False


# ------------------------------------------------------------------ SubjectAccessReview


def test_sar_allows(apiserver, access_reviews, sar_backend):
    make_workspace("ws")
    access_reviews.allow("RBAC: allowed")

    response = post(apiserver, admission_review(uid="s-1"))

    assert response == {"uid": "s-1", "allowed": True}
    spec = access_reviews.bodies[-1]["spec"]
    assert spec["user"] == "alice" and spec["groups"] == ALICE["groups"] and spec["uid"] == "42"
    assert spec["resourceAttributes"] == {
        "namespace": "default",
        "verb": "use",
        "group": "kruntimes.io",
        "version": "v1alpha1",
        "resource": "persistentworkspaces",
        "subresource": "use",
        "name": "ws",
    }


def test_sar_timeout_denies_within_the_budget(apiserver, access_reviews, sar_backend, settings):
    settings.KRUNTIMES_SAR_TIMEOUT_SECONDS = 30.0  # the use review's own budget is shorter
    make_workspace("ws")
    access_reviews.hold()

    started = time.monotonic()
    response = post(apiserver, admission_review(uid="s-2"))
    elapsed = time.monotonic() - started

    assert response["uid"] == "s-2" and response["allowed"] is False
    assert response["status"]["code"] == 403
    assert "authorization check failed: no answer within" in response["status"]["message"]
    assert 1.5 < elapsed < 4.0


def test_sar_error_denies(apiserver, access_reviews, sar_backend):
    make_workspace("ws")
    access_reviews.fail(503)

    response = post(apiserver, admission_review())

    assert response["allowed"] is False
    assert "HTTP 503" in response["status"]["message"]
