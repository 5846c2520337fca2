"""DeleteOptions as kube-apiserver reads them: from the body (as kubectl and client-go send
them) or, without a body, from the query string; dryRun deletes nothing, propagationPolicy
and orphanDependents choose the cascade, preconditions are 409s, and a body that is no
DeleteOptions is a 400 naming the field."""

from __future__ import annotations

import pytest

from tests.helpers.api import API_VERSION, assert_status, causes, gadgets, widget, widgets
from tests.helpers.ownership import child_of, names

pytestmark = pytest.mark.django_db
DRY_RUN = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}


def delete(client, url: str, body: dict | None = None):
    if body is None:
        return client.delete(url)
    return client.delete(url, body, format="json")


@pytest.mark.parametrize(
    "url_suffix, body",
    [
        ("", DRY_RUN),  # kubectl delete --dry-run=server
        ("", {"dryRun": ["All"]}),  # the Python client's V1DeleteOptions: no kind
        ("?dryRun=All", None),
    ],
    ids=["body", "body-without-type", "query"],
)
def test_a_dry_run_deletes_nothing(admin_api, url_suffix, body):
    admin_api.post(widgets(), widget("a"), format="json")
    response = delete(admin_api, f"{widgets()}/a{url_suffix}", body)
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "Success"
    assert names(admin_api) == ["a"]


def test_a_dry_run_answers_the_object_as_the_delete_would_leave_it(admin_api):
    created = admin_api.post(
        widgets(), widget("a", metadata={"finalizers": ["example.com/hold"]}), format="json"
    ).json()
    answered = delete(admin_api, f"{widgets()}/a", DRY_RUN).json()["metadata"]
    assert answered["deletionTimestamp"] and answered["finalizers"] == ["example.com/hold"]
    stored = admin_api.get(f"{widgets()}/a").json()["metadata"]
    assert "deletionTimestamp" not in stored
    assert stored["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
def test_a_dry_run_leaves_the_owner_and_its_children_untouched(
    admin_api, owner, policy, django_capture_on_commit_callbacks
):
    admin_api.post(widgets(), child_of(owner), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        response = delete(admin_api, f"{gadgets()}/owner", {**DRY_RUN, "propagationPolicy": policy})
    assert response.status_code == 200, response.json()
    stored = admin_api.get(f"{gadgets()}/owner").json()["metadata"]
    assert "deletionTimestamp" not in stored and "finalizers" not in stored
    child = admin_api.get(f"{widgets()}/child").json()["metadata"]
    assert child["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    assert "deletionTimestamp" not in child


def test_a_foreground_dry_run_shows_the_finalizer_it_would_add(admin_api, owner):
    admin_api.post(widgets(), child_of(owner), format="json")
    body = {**DRY_RUN, "propagationPolicy": "Foreground"}
    answered = delete(admin_api, f"{gadgets()}/owner", body).json()["metadata"]
    assert answered["finalizers"] == ["foregroundDeletion"] and answered["deletionTimestamp"]


@pytest.mark.parametrize(
    "url_suffix, body",
    [
        ("", {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}),
        ("?propagationPolicy=Orphan", None),
        ("", {"orphanDependents": True}),
        ("?orphanDependents=true", None),
    ],
    ids=["body", "query", "orphanDependents-body", "orphanDependents-query"],
)
def test_orphan_from_the_body_or_the_query(
    admin_api, owner, url_suffix, body, django_capture_on_commit_callbacks
):
    admin_api.post(widgets(), child_of(owner), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        response = delete(admin_api, f"{gadgets()}/owner{url_suffix}", body)
    assert response.status_code == 200, response.json()
    assert_status(admin_api.get(f"{gadgets()}/owner"), 404, "NotFound")
    assert "ownerReferences" not in admin_api.get(f"{widgets()}/child").json()["metadata"]


@pytest.mark.parametrize(
    "url_suffix, body",
    [("", {"propagationPolicy": "Background"}), ("?propagationPolicy=Background", None)],
    ids=["body", "query"],
)
def test_background_from_the_body_or_the_query_deletes_the_children(
    admin_api, owner, url_suffix, body, django_capture_on_commit_callbacks
):
    admin_api.post(widgets(), child_of(owner), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        delete(admin_api, f"{gadgets()}/owner{url_suffix}", body)
    assert names(admin_api) == []


def test_with_a_body_the_query_string_is_not_read(admin_api):
    """As kube-apiserver's DeleteResource: a body is the whole of the options."""
    admin_api.post(widgets(), widget("a"), format="json")
    admin_api.post(widgets(), widget("b"), format="json")
    # the query's bad policy is not even looked at
    kept = delete(admin_api, f"{widgets()}/a?propagationPolicy=Sideways", DRY_RUN)
    assert kept.status_code == 200, kept.json()
    assert names(admin_api) == ["a", "b"]
    # nor is its dryRun: the body asked for a real delete
    gone = delete(admin_api, f"{widgets()}/b?dryRun=All", {"propagationPolicy": "Background"})
    assert gone.status_code == 200
    assert names(admin_api) == ["a"]


@pytest.mark.parametrize(
    "api_version", ["v1", "meta.k8s.io/v1", "meta.k8s.io/v1beta1", API_VERSION, None]
)
def test_the_versions_a_delete_options_body_may_name(admin_api, api_version):
    admin_api.post(widgets(), widget("a"), format="json")
    body = {**DRY_RUN, "apiVersion": api_version}
    assert delete(admin_api, f"{widgets()}/a", body).status_code == 200


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "Widget", "apiVersion": "v1", "dryRun": ["All"]}, "kind"),
        ({"kind": "DeleteOptions", "apiVersion": "apps/v1", "dryRun": ["All"]}, "apiVersion"),
        ({"dryrun": ["All"]}, "dryrun"),
        ({"dryRun": "All"}, "dryRun"),
        ({"gracePeriodSeconds": "5"}, "gracePeriodSeconds"),
        ({"orphanDependents": "yes"}, "orphanDependents"),
        ({"propagationPolicy": 1}, "propagationPolicy"),
        ({"preconditions": "x"}, "preconditions"),
        ({"preconditions": {"uid": 5}}, "preconditions.uid"),
        ({"preconditions": {"generation": "1"}}, "preconditions.generation"),
        (["All"], ""),
    ],
)
def test_a_body_that_is_no_delete_options_is_a_bad_request(admin_api, body, field):
    admin_api.post(widgets(), widget("a"), format="json")
    response = admin_api.delete(f"{widgets()}/a", body, format="json")
    assert_status(response, 400, "BadRequest")
    assert field in causes(response)
    assert names(admin_api) == ["a"]  # a typo never turns a dry run into a delete


@pytest.mark.parametrize(
    "url_suffix, body, field",
    [
        ("?propagationPolicy=Sideways", None, "propagationPolicy"),
        ("", {"propagationPolicy": "Sideways"}, "propagationPolicy"),
        ("?dryRun=Some", None, "dryRun"),
        ("", {"dryRun": ["All", "Some"]}, "dryRun"),
        ("", {"propagationPolicy": "Orphan", "orphanDependents": True}, "propagationPolicy"),
    ],
)
def test_unsupported_values_are_invalid_delete_options(admin_api, url_suffix, body, field):
    admin_api.post(widgets(), widget("a"), format="json")
    response = delete(admin_api, f"{widgets()}/a{url_suffix}", body)
    status = assert_status(response, 422, "Invalid")
    assert status["message"].startswith('DeleteOptions.meta.k8s.io "" is invalid: ')
    assert field in causes(response)
    assert names(admin_api) == ["a"]


def test_a_malformed_query_value_is_a_bad_request(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = admin_api.delete(f"{widgets()}/a?gracePeriodSeconds=soon")
    assert_status(response, 400, "BadRequest")
    assert "gracePeriodSeconds" in causes(response)


@pytest.mark.parametrize(
    "url_suffix, body",
    [
        ("", {"gracePeriodSeconds": 0}),
        ("?gracePeriodSeconds=0", None),
        ("", {"gracePeriodSeconds": 30}),
    ],
)
def test_a_grace_period_is_accepted_and_the_delete_is_immediate(admin_api, url_suffix, body):
    """Kinds without graceful deletion (every kind served here, as custom resources) ignore it."""
    admin_api.post(widgets(), widget("a"), format="json")
    assert delete(admin_api, f"{widgets()}/a{url_suffix}", body).status_code == 200
    assert names(admin_api) == []


def test_a_uid_precondition_that_does_not_hold_is_a_conflict(admin_api):
    created = admin_api.post(widgets(), widget("a"), format="json").json()
    uid = created["metadata"]["uid"]
    response = delete(admin_api, f"{widgets()}/a", {"preconditions": {"uid": "not-it"}})
    status = assert_status(response, 409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on widgets.testing.kruntimes.io "a": the UID in the '
        f"precondition (not-it) does not match the UID in record ({uid}). "
        "The object might have been deleted and then recreated"
    )
    assert names(admin_api) == ["a"]
    held = delete(admin_api, f"{widgets()}/a", {"preconditions": {"uid": uid}})
    assert held.status_code == 200
    assert names(admin_api) == []


def test_a_resource_version_precondition_that_does_not_hold_is_a_conflict(admin_api):
    created = admin_api.post(widgets(), widget("a"), format="json").json()
    version = created["metadata"]["resourceVersion"]
    response = delete(admin_api, f"{widgets()}/a", {"preconditions": {"resourceVersion": "1"}})
    status = assert_status(response, 409, "Conflict")
    assert (
        f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in "
        f"record ({version}). The object might have been modified"
    ) in status["message"]
    assert names(admin_api) == ["a"]


def test_a_dry_run_still_checks_the_preconditions(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    body = {**DRY_RUN, "preconditions": {"uid": "not-it"}}
    assert_status(delete(admin_api, f"{widgets()}/a", body), 409, "Conflict")


def test_a_collection_delete_deletes_what_the_selector_matches(admin_api):
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        admin_api.post(widgets(), widget(name, metadata={"labels": {"team": team}}), format="json")
    response = admin_api.delete(f"{widgets()}?labelSelector=team%3Dx")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["kind"], body["apiVersion"]) == ("WidgetList", API_VERSION)
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
    assert names(admin_api) == ["c"]


@pytest.mark.parametrize(
    "url_suffix, body",
    [("", DRY_RUN), ("", {"dryRun": ["All"]}), ("?dryRun=All", None)],
    ids=["body", "body-without-type", "query"],
)
def test_a_collection_dry_run_deletes_nothing(admin_api, url_suffix, body):
    admin_api.post(
        widgets(), widget("a", metadata={"finalizers": ["example.com/hold"]}), format="json"
    )
    admin_api.post(widgets(), widget("b"), format="json")
    response = delete(admin_api, f"{widgets()}{url_suffix}", body)
    assert response.status_code == 200, response.json()
    items = {i["metadata"]["name"]: i["metadata"] for i in response.json()["items"]}
    assert sorted(items) == ["a", "b"] and items["a"]["deletionTimestamp"]
    assert names(admin_api) == ["a", "b"]
    assert "deletionTimestamp" not in admin_api.get(f"{widgets()}/a").json()["metadata"]


def test_a_collection_delete_orphans_from_the_body(
    admin_api, owner, django_capture_on_commit_callbacks
):
    admin_api.post(widgets(), child_of(owner), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        response = delete(admin_api, gadgets(), {"propagationPolicy": "Orphan"})
    assert response.status_code == 200, response.json()
    assert_status(admin_api.get(f"{gadgets()}/owner"), 404, "NotFound")
    assert "ownerReferences" not in admin_api.get(f"{widgets()}/child").json()["metadata"]


def test_a_collection_delete_checks_its_options_and_preconditions(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    assert_status(delete(admin_api, widgets(), {"kind": "Widget"}), 400, "BadRequest")
    assert_status(delete(admin_api, f"{widgets()}?dryRun=Some"), 422, "Invalid")
    conflict = delete(admin_api, widgets(), {"preconditions": {"uid": "not-it"}})
    assert_status(conflict, 409, "Conflict")
    assert names(admin_api) == ["a"]


def test_a_collection_delete_needs_the_deletecollection_verb(user_api, admin_api):
    from tests.helpers.rbac import TESTING, bind_role, make_role

    def allow(name: str, verbs: list[str]) -> None:
        rules = [{"apiGroups": [TESTING], "resources": ["widgets"], "verbs": verbs}]
        make_role(admin_api, name, rules)
        bind_role(admin_api, name, "Role", name)

    admin_api.post(widgets(), widget("a"), format="json")
    allow("deleter", ["delete", "list"])
    assert_status(user_api.delete(widgets()), 403, "Forbidden")
    assert names(admin_api) == ["a"]
    allow("collector", ["deletecollection"])
    assert user_api.delete(widgets()).status_code == 200
    assert names(admin_api) == []


def test_authorization_comes_before_the_options(user_api, admin_api):
    """As kube-apiserver: a user who may not delete learns nothing about the body."""
    admin_api.post(widgets(), widget("a"), format="json")
    bad = {"kind": "Widget"}
    assert_status(user_api.delete(f"{widgets()}/a", bad, format="json"), 403, "Forbidden")
    assert_status(user_api.delete(widgets(), bad, format="json"), 403, "Forbidden")
