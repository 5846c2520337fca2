"""Impersonation (``kubectl --as``): each Impersonate-* header needs the ``impersonate`` verb on
what it names, a refusal is the API server's 403, and an allowed request is the impersonated
user's in every review, admission check and access review."""

from __future__ import annotations

import logging

import pytest

from portal.auth.attributes import ResourceAttributes
from portal.auth.default_roles import default_cluster_roles
from portal.auth.impersonation import impersonate
from portal.auth.rbac import rules_allow
from tests.helpers.api import assert_status, token_client
from tests.helpers.rbac import (
    TESTING,
    assert_forbidden,
    assert_unauthorized,
    bind_cluster_role,
    bind_role,
    make_cluster_role,
    make_role,
    make_widget,
    widgets,
)

pytestmark = pytest.mark.django_db

AUTHZ = "/apis/authorization.k8s.io/v1"
AS_BOB = {"HTTP_IMPERSONATE_USER": "bob"}
BOB = [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]
WIDGETS = {"apiGroups": [TESTING], "resources": ["widgets"], "verbs": ["get", "list", "create"]}


def impersonating(resource, names=(), group=""):
    rule = {"apiGroups": [group], "resources": [resource], "verbs": ["impersonate"]}
    return {**rule, "resourceNames": list(names)} if names else rule


def grant_alice(admin_api, name, *rules):
    make_cluster_role(admin_api, name, list(rules))
    bind_cluster_role(admin_api, name, name)


def can_i(client, verb, resource, group=TESTING, **headers):
    review = {
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                                        "namespace": "default"}},
    }  # fmt: skip
    response = client.post(f"{AUTHZ}/selfsubjectaccessreviews", review, format="json", **headers)
    assert response.status_code == 201, response.json()
    return response.json()["status"]["allowed"]


@pytest.fixture
def bob_edits_widgets(admin_api, django_user_model):
    django_user_model.objects.create_user("bob")
    make_role(admin_api, "widget-writer", [WIDGETS])
    bind_role(admin_api, "bob-widgets", "Role", "widget-writer", subjects=BOB)
    make_widget(admin_api, "bobs")


def test_impersonating_a_user_needs_the_grant(user_api):
    status = assert_forbidden(user_api.get(widgets(), **AS_BOB))
    assert status["message"].startswith(
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" '
        'in API group "" at the cluster scope'
    )
    assert status["details"]["kind"] == "users" and status["details"]["name"] == "bob"


def test_with_the_grant_a_list_is_bobs_view(admin_api, user_api, bob_edits_widgets):
    assert_forbidden(user_api.get(widgets()), 'User "alice" cannot list')
    grant_alice(admin_api, "as-bob", impersonating("users", ["bob"]))
    listed = user_api.get(widgets(), **AS_BOB)
    assert listed.status_code == 200, listed.json()
    assert [w["metadata"]["name"] for w in listed.json()["items"]] == ["bobs"]
    # resourceNames bound the grant: bob, nobody else
    assert_forbidden(
        user_api.get(widgets(), HTTP_IMPERSONATE_USER="carol"),
        'users "carol" is forbidden: User "alice" cannot impersonate',
    )


def test_writes_are_admitted_as_bob(admin_api, user_api, bob_edits_widgets):
    grant_alice(admin_api, "as-bob", impersonating("users", ["bob"]))
    body = {"apiVersion": f"{TESTING}/v1", "kind": "Widget", "metadata": {"name": "w2"},
            "spec": {"size": 1}}  # fmt: skip
    assert user_api.post(widgets(), body, format="json", **AS_BOB).status_code == 201
    assert_forbidden(
        user_api.delete(f"{widgets()}/w2", **AS_BOB),
        'widgets.testing.kruntimes.io "w2" is forbidden: User "bob" cannot delete',
    )
    # escalation is judged for bob too: he cannot grant what he does not hold
    role = {"kind": "Role", "metadata": {"name": "r"}, "rules": [impersonating("users")]}
    assert_forbidden(
        user_api.post(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role, format="json",
            **AS_BOB,
        ),
        'User "bob"',
    )  # fmt: skip


def test_the_impersonator_is_recorded(admin_api, user_api, bob_edits_widgets, caplog):
    grant_alice(admin_api, "as-bob", impersonating("users", ["bob"]))
    with caplog.at_level(logging.INFO, logger="portal.auth.impersonation"):
        assert user_api.get(widgets(), **AS_BOB).status_code == 200
    assert "alice is impersonating bob" in caplog.text


def test_can_i_answers_for_the_impersonated_user(admin_api, user_api, bob_edits_widgets):
    grant_alice(admin_api, "as-bob", impersonating("users", ["bob"]))
    assert can_i(user_api, "create", "widgets") is False
    assert can_i(user_api, "create", "widgets", **AS_BOB) is True
    assert can_i(user_api, "delete", "widgets", **AS_BOB) is False
    assert can_i(user_api, "impersonate", "users", group="", **AS_BOB) is False


def test_the_users_own_groups_are_not_looked_up(admin_api, user_api, django_user_model):
    """As kube-apiserver: Impersonate-User alone gives just system:authenticated."""
    from django.contrib.auth.models import Group

    bob = django_user_model.objects.create_user("bob")
    bob.groups.add(Group.objects.create(name="devs"))
    make_role(admin_api, "widget-writer", [WIDGETS])
    devs = [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]
    bind_role(admin_api, "devs-widgets", "Role", "widget-writer", subjects=devs)
    assert token_client(bob).get(widgets()).status_code == 200  # bob himself is in devs
    grant_alice(admin_api, "as-bob", impersonating("users", ["bob"]))
    assert_forbidden(user_api.get(widgets(), **AS_BOB), 'User "bob" cannot list')
    as_devs = {**AS_BOB, "HTTP_IMPERSONATE_GROUP": "devs"}
    assert_forbidden(
        user_api.get(widgets(), **as_devs),
        'groups "devs" is forbidden: User "alice" cannot impersonate resource "groups" '
        'in API group "" at the cluster scope',
    )
    grant_alice(admin_api, "as-devs", impersonating("groups", ["devs"]))
    assert user_api.get(widgets(), **as_devs).status_code == 200


def test_groups_as_kubernetes_fills_them(admin_user):
    def groups(**headers):  # a superuser may impersonate anyone (cluster-admin)
        return impersonate(admin_user, headers).user_info.groups

    assert groups(**{"Impersonate-User": "bob"}) == ("system:authenticated",)
    asked = {"Impersonate-User": "bob", "Impersonate-Group": "a, b"}  # two header lines
    assert groups(**asked) == ("a", "b", "system:authenticated")
    explicit = {"Impersonate-User": "bob", "Impersonate-Group": "system:authenticated,a"}
    assert groups(**explicit) == ("system:authenticated", "a")
    assert groups(**{"Impersonate-User": "system:anonymous"}) == ("system:unauthenticated",)
    account = {"Impersonate-User": "system:serviceaccount:ci:builder"}
    assert groups(**account) == (
        "system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"
    )  # fmt: skip


def test_a_service_account_needs_impersonate_serviceaccounts_in_its_namespace(admin_api, user_api):
    alice = user_api
    account = {"HTTP_IMPERSONATE_USER": "system:serviceaccount:default:builder"}
    assert_forbidden(
        alice.get(widgets(), **account),
        'serviceaccounts "builder" is forbidden: User "alice" cannot impersonate resource '
        '"serviceaccounts" in API group "" in the namespace "default"',
    )
    # the users grant does not cover service accounts
    grant_alice(admin_api, "as-anyone", impersonating("users"))
    assert_forbidden(alice.get(widgets(), **account), 'serviceaccounts "builder"')
    make_role(admin_api, "sa-impersonator", [impersonating("serviceaccounts", ["builder"])])
    bind_role(admin_api, "alice-as-builder", "Role", "sa-impersonator")
    make_role(admin_api, "widget-writer", [WIDGETS])
    builder = [{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}]
    bind_role(admin_api, "builder-widgets", "Role", "widget-writer", subjects=builder)
    assert alice.get(widgets(), **account).status_code == 200
    assert_forbidden(alice.get(widgets("other"), **account), "cannot list")


def test_uid_and_extras_need_their_grants(admin_api, user, user_api):
    alice_user, alice = user, user_api
    grant_alice(admin_api, "as-bob", impersonating("users", ["bob"]))
    with_uid = {**AS_BOB, "HTTP_IMPERSONATE_UID": "u-1"}
    assert_forbidden(
        alice.get(widgets(), **with_uid),
        'uids.authentication.k8s.io "u-1" is forbidden: User "alice" cannot impersonate '
        'resource "uids" in API group "authentication.k8s.io" at the cluster scope',
    )
    with_extra = {**AS_BOB, "HTTP_IMPERSONATE_EXTRA_SCOPES": "view"}
    assert_forbidden(
        alice.get(widgets(), **with_extra),
        'userextras.authentication.k8s.io "view" is forbidden: User "alice" cannot '
        'impersonate resource "userextras/scopes" in API group "authentication.k8s.io"',
    )
    auth = "authentication.k8s.io"
    grant_alice(
        admin_api, "uids-extras",
        impersonating("uids", ["u-1"], auth), impersonating("userextras/scopes", ["view"], auth),
    )  # fmt: skip
    both = {**with_uid, **with_extra}
    assert_forbidden(alice.get(widgets(), **both), 'User "bob" cannot list')  # past impersonation
    headers = {"Impersonate-User": "bob", "Impersonate-Uid": "u-1",
               "Impersonate-Extra-Acme.com%2FProject": "p1,p2", "Impersonate-Extra-Scopes": "view"}  # fmt: skip
    grant_alice(admin_api, "project", impersonating("userextras/acme.com/project", (), auth))
    info = impersonate(alice_user, headers).user_info
    assert (info.username, info.uid) == ("bob", "u-1")
    assert info.extra == {"acme.com/project": ["p1", "p2"], "scopes": ["view"]}


def test_groups_uid_or_extras_without_a_user_are_a_bad_request(admin_api):
    body = assert_status(admin_api.get(widgets(), HTTP_IMPERSONATE_GROUP="devs"), 400, "BadRequest")
    assert "without impersonating a user" in body["message"]
    assert body["details"]["causes"][0]["field"] == "Impersonate-User"
    assert_status(admin_api.get(widgets(), HTTP_IMPERSONATE_UID="u"), 400, "BadRequest")


def test_an_anonymous_sender_is_unauthorized(anon_api):
    assert_unauthorized(anon_api.get(widgets(), **AS_BOB))


def test_a_superuser_may_impersonate_and_then_is_only_bob(admin_api, bob_edits_widgets):
    assert admin_api.get(widgets(), **AS_BOB).status_code == 200
    assert_forbidden(admin_api.get(widgets("other"), **AS_BOB), 'User "bob" cannot list')


def test_default_roles_grant_only_service_account_impersonation():
    """As Kubernetes' bootstrap policy: edit (hence admin) may impersonate the namespace's
    ServiceAccounts; no default role impersonates users, groups, uids or extras."""
    roles = default_cluster_roles()

    def may(role, resource, group="", namespace="default"):
        attrs = ResourceAttributes("impersonate", group, resource, namespace=namespace, name="x")
        return rules_allow(roles[role], attrs)

    assert not may("view", "serviceaccounts")
    assert may("edit", "serviceaccounts") and may("admin", "serviceaccounts")
    for role in ("view", "edit", "admin"):
        assert not may(role, "users") and not may(role, "groups")
        assert not may(role, "uids", "authentication.k8s.io")


def test_the_cluster_authorizes_impersonation_then_sees_bob(
    sar_backend, access_reviews, user_api, user
):
    """Under the SubjectAccessReview authorizer the cluster is asked both questions."""
    access_reviews.allow()
    headers = {**AS_BOB, "HTTP_IMPERSONATE_GROUP": "devs", "HTTP_IMPERSONATE_EXTRA_SCOPES": "view"}
    assert user_api.get(widgets(), **headers).status_code == 200
    asked = [body["spec"] for body in access_reviews.bodies]
    alice = {"user": "alice", "uid": str(user.pk), "groups": ["system:authenticated"]}
    assert asked[:3] == [
        {**alice, "resourceAttributes": {"verb": "impersonate", "resource": "users",
                                         "name": "bob"}},
        {**alice, "resourceAttributes": {"verb": "impersonate", "resource": "groups",
                                         "name": "devs"}},
        {**alice, "resourceAttributes": {"verb": "impersonate", "group": "authentication.k8s.io",
                                         "resource": "userextras", "subresource": "scopes",
                                         "name": "view"}},
    ]  # fmt: skip
    assert asked[3]["user"] == "bob" and "uid" not in asked[3]
    assert asked[3]["groups"] == ["devs", "system:authenticated"]
    assert asked[3]["extra"] == {"scopes": ["view"]}
    assert asked[3]["resourceAttributes"]["verb"] == "list"

    access_reviews.deny("no impersonation here")
    assert_forbidden(
        user_api.get(widgets(), **AS_BOB),
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API '
        'group "" at the cluster scope: no impersonation here',
    )


def test_the_workspace_use_review_judges_the_impersonated_user(admin_api):
    from tests.helpers.runs import runs_url
    from tests.helpers.workspace_access import grant_runs, grant_use, workspace_run
    from tests.helpers.workspaces import make_workspace

    make_workspace("ws")
    grant_runs("bob")
    assert_forbidden(
        admin_api.post(runs_url(), workspace_run(), format="json", **AS_BOB),
        'persistentworkspaces.kruntimes.io "ws" is forbidden: User "bob" cannot use',
    )
    grant_use(["ws"], user="bob")
    created = admin_api.post(runs_url(), workspace_run(), format="json", **AS_BOB)
    assert created.status_code == 201, created.json()
