"""Local RBAC at the edge a user touches: roles and bindings written through the REST API as
an admin, then a normal user (alice) reading and writing Widgets over HTTP."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from portal.auth.authorizer import Decision, ResourceAttributes, UserInfo
from portal.auth.rbac import RBACAuthorizer
from tests.helpers.api import token_client
from tests.helpers.rbac import (
    ALICE,
    API,
    RBAC,
    READ_WIDGETS,
    TESTING,
    assert_forbidden,
    assert_unauthorized,
    bind_cluster_role,
    bind_role,
    created,
    make_cluster_role,
    make_role,
    make_widget,
    widgets,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_namespace(admin_api):
    return created(
        admin_api.post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
            format="json",
        )
    )


# --- who is asking ------------------------------------------------------------------------


def test_without_a_binding_alice_is_forbidden(user_api):
    status = assert_forbidden(
        user_api.get(widgets()),
        'User "alice" cannot list resource "widgets"',
        f'in API group "{TESTING}"',
        'in the namespace "default"',
        "no RBAC rule matched",
    )
    assert status["details"] == {"group": TESTING, "kind": "widgets"}


def test_forbidden_names_the_object(user_api, admin_api):
    make_widget(admin_api, "w1")

    status = assert_forbidden(
        user_api.delete(f"{widgets()}/w1"), f'widgets.{TESTING} "w1" is forbidden', "cannot delete"
    )
    assert status["details"]["name"] == "w1"


def test_anonymous_is_unauthorized(anon_api):
    response = anon_api.get(widgets())

    assert_unauthorized(response)
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_invalid_token_is_unauthorized(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")

    assert_unauthorized(client.get(widgets()))


def test_superuser_may_do_everything(admin_api, other_namespace):
    make_widget(admin_api, "w1")
    make_widget(admin_api, "w2", namespace="other")

    assert admin_api.get(f"{API}/widgets").status_code == 200
    assert admin_api.get(f"{API}/gadgets").status_code == 200
    status = admin_api.put(
        f"{widgets()}/w1/status",
        {
            "apiVersion": f"{TESTING}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "status": {"phase": "Ready"},
        },
        format="json",
    )
    assert status.status_code == 200, status.json()
    assert admin_api.delete(f"{widgets('other')}/w2").status_code == 200


# --- where a binding applies --------------------------------------------------------------


def test_role_binding_grants_only_its_namespace(user_api, admin_api, other_namespace):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(admin_api, "alice-reads", "Role", "widget-reader")

    assert user_api.get(widgets()).status_code == 200
    assert_forbidden(user_api.get(widgets("other")), 'in the namespace "other"')
    assert_forbidden(user_api.get(f"{API}/widgets"), "at the cluster scope")


def test_role_binding_grants_only_the_rule(user_api, admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(admin_api, "alice-reads", "Role", "widget-reader")

    assert_forbidden(
        user_api.post(
            widgets(),
            {
                "apiVersion": f"{TESTING}/v1",
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"size": 1},
            },
            format="json",
        ),
        "cannot create",
    )


def test_cluster_role_binding_grants_everywhere(user_api, admin_api, other_namespace):
    make_cluster_role(
        admin_api,
        "widget-reader",
        READ_WIDGETS + [{"apiGroups": [TESTING], "resources": ["gadgets"], "verbs": ["list"]}],
    )
    bind_cluster_role(admin_api, "alice-reads", "widget-reader")

    assert user_api.get(widgets()).status_code == 200
    assert user_api.get(widgets("other")).status_code == 200
    assert user_api.get(f"{API}/widgets").status_code == 200
    assert user_api.get(f"{API}/gadgets").status_code == 200


def test_role_binding_to_cluster_role_is_scoped_to_its_namespace(
    user_api, admin_api, other_namespace
):
    make_cluster_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(admin_api, "alice-reads", "ClusterRole", "widget-reader")

    assert user_api.get(widgets()).status_code == 200
    assert_forbidden(user_api.get(widgets("other")))
    assert_forbidden(user_api.get(f"{API}/widgets"))


def test_role_of_another_namespace_is_not_used(user_api, admin_api, other_namespace):
    make_role(admin_api, "widget-reader", READ_WIDGETS, namespace="other")
    bind_role(admin_api, "alice-reads", "Role", "widget-reader")  # in default

    assert_forbidden(user_api.get(widgets()))
    assert_forbidden(user_api.get(widgets("other")))


def test_binding_without_its_role_grants_nothing_until_the_role_exists(user_api, admin_api):
    bind_role(admin_api, "alice-reads", "Role", "widget-reader")
    assert_forbidden(user_api.get(widgets()))

    make_role(admin_api, "widget-reader", READ_WIDGETS)

    assert user_api.get(widgets()).status_code == 200


def test_cluster_role_binding_cannot_grant_a_role(user_api, admin_api):
    from portal.models import ClusterRoleBinding

    make_role(admin_api, "widget-reader", READ_WIDGETS)
    # Kubernetes rejects this roleRef; written past validation to show it would grant nothing.
    ClusterRoleBinding.objects.create(
        name="broken",
        subjects=ALICE,
        role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-reader"},
    )

    assert_forbidden(user_api.get(widgets()))


def test_terminating_binding_still_grants(user_api, admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(admin_api, "alice-reads", "Role", "widget-reader", finalizers=["example.com/hold"])

    deleting = admin_api.delete(f"{RBAC}/namespaces/default/rolebindings/alice-reads")
    assert deleting.status_code == 200
    assert deleting.json()["metadata"]["deletionTimestamp"]

    assert user_api.get(widgets()).status_code == 200


def test_deleted_binding_no_longer_grants(user_api, admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(admin_api, "alice-reads", "Role", "widget-reader")
    assert user_api.get(widgets()).status_code == 200

    assert (
        admin_api.delete(f"{RBAC}/namespaces/default/rolebindings/alice-reads").status_code == 200
    )

    assert_forbidden(user_api.get(widgets()))


# --- what a rule grants ---------------------------------------------------------------------

STATUS_BODY = {
    "apiVersion": f"{TESTING}/v1",
    "kind": "Widget",
    "metadata": {"name": "w1"},
    "status": {"phase": "Ready"},
}


def test_status_needs_the_status_subresource(user_api, admin_api):
    make_widget(admin_api, "w1")
    make_role(
        admin_api,
        "widget-writer",
        [{"apiGroups": [TESTING], "resources": ["widgets"], "verbs": ["get", "update"]}],
    )
    bind_role(admin_api, "alice-writes", "Role", "widget-writer")
    spec_body = {**STATUS_BODY, "spec": {"size": 2}}
    spec_body.pop("status")

    assert user_api.put(f"{widgets()}/w1", spec_body, format="json").status_code == 200
    assert_forbidden(
        user_api.put(f"{widgets()}/w1/status", STATUS_BODY, format="json"),
        'cannot update resource "widgets/status"',
    )


def test_status_subresource_rule_allows_status(user_api, admin_api):
    make_widget(admin_api, "w1")
    make_role(
        admin_api,
        "widget-status",
        [{"apiGroups": [TESTING], "resources": ["widgets/status"], "verbs": ["update"]}],
    )
    bind_role(admin_api, "alice-status", "Role", "widget-status")

    response = user_api.put(f"{widgets()}/w1/status", STATUS_BODY, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == {"phase": "Ready"}
    assert_forbidden(
        user_api.put(
            f"{widgets()}/w1",
            {
                "apiVersion": f"{TESTING}/v1",
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"size": 2},
            },
            format="json",
        )
    )


def test_resource_names_restrict_get(user_api, admin_api):
    make_widget(admin_api, "w1")
    make_widget(admin_api, "w2")
    make_role(
        admin_api,
        "w1-reader",
        [
            {
                "apiGroups": [TESTING],
                "resources": ["widgets"],
                "verbs": ["get", "list"],
                "resourceNames": ["w1"],
            }
        ],
    )
    bind_role(admin_api, "alice-w1", "Role", "w1-reader")

    assert user_api.get(f"{widgets()}/w1").status_code == 200
    assert_forbidden(user_api.get(f"{widgets()}/w2"), f'widgets.{TESTING} "w2"')
    assert_forbidden(user_api.get(widgets()), "cannot list")


# --- whom a binding names -------------------------------------------------------------------


def test_group_subject_via_django_group(user_api, admin_api, user):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(
        admin_api,
        "devs-read",
        "Role",
        "widget-reader",
        subjects=[{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}],
    )
    assert_forbidden(user_api.get(widgets()))

    user.groups.add(Group.objects.create(name="devs"))

    assert user_api.get(widgets()).status_code == 200


def test_every_authenticated_user(user_api, admin_api, user):
    make_cluster_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_cluster_role(
        admin_api,
        "everyone-reads",
        "widget-reader",
        subjects=[{"kind": "Group", "name": "system:authenticated"}],
    )

    assert user_api.get(widgets()).status_code == 200
    assert RBACAuthorizer().review(
        UserInfo.from_django(user),
        ResourceAttributes(verb="list", group=TESTING, resource="widgets", namespace="default"),
    ) == Decision(
        True,
        'RBAC: allowed by ClusterRoleBinding "everyone-reads" of ClusterRole '
        '"widget-reader" to Group "system:authenticated"',
    )


def test_service_account_subject(admin_api, django_user_model):
    robot = django_user_model.objects.create_user("system:serviceaccount:default:builder")
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(
        admin_api,
        "builder-reads",
        "Role",
        "widget-reader",
        subjects=[{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}],
    )

    assert token_client(robot).get(widgets()).status_code == 200


def test_binding_for_someone_else_grants_alice_nothing(user_api, admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(
        admin_api,
        "bob-reads",
        "Role",
        "widget-reader",
        subjects=[
            {"kind": "User", "name": "bob"},
            {"kind": "Group", "name": "alice"},
            {"kind": "ServiceAccount", "name": "alice", "namespace": "default"},
        ],
    )

    assert_forbidden(user_api.get(widgets()))


# --- validation of the RBAC kinds -----------------------------------------------------------


def test_rule_without_verbs_is_invalid(admin_api):
    response = admin_api.post(
        f"{RBAC}/namespaces/default/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "no-verbs"},
            "rules": [{"apiGroups": [TESTING], "resources": ["widgets"]}],
        },
        format="json",
    )

    assert response.status_code == 422, response.json()
    status = response.json()
    assert status["reason"] == "Invalid"
    assert "rules[0].verbs" in [cause["field"] for cause in status["details"]["causes"]]


def test_role_ref_cannot_change(admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    make_role(admin_api, "widget-writer", READ_WIDGETS)
    binding = bind_role(admin_api, "alice-reads", "Role", "widget-reader")
    binding["roleRef"]["name"] = "widget-writer"

    response = admin_api.put(
        f"{RBAC}/namespaces/default/rolebindings/alice-reads", binding, format="json"
    )

    assert response.status_code == 422, response.json()
    status = response.json()
    assert status["reason"] == "Invalid"
    assert [cause["field"] for cause in status["details"]["causes"]] == ["roleRef"]


# --- the loader -----------------------------------------------------------------------------


def review(user: UserInfo, verb="list", name="", namespace="default"):
    return RBACAuthorizer().review(
        user,
        ResourceAttributes(
            verb=verb, group=TESTING, resource="widgets", namespace=namespace, name=name
        ),
    )


def test_review_takes_a_handful_of_queries(admin_api, django_assert_max_num_queries):
    make_cluster_role(
        admin_api, "nothing", [{"apiGroups": [TESTING], "resources": ["gadgets"], "verbs": ["get"]}]
    )
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    for index in range(20):
        bind_cluster_role(
            admin_api,
            f"crb-{index}",
            "nothing",
            subjects=[{"kind": "User", "name": f"user-{index}"}, {"kind": "Group", "name": "devs"}],
        )
        bind_role(
            admin_api,
            f"rb-{index}",
            "ClusterRole",
            "nothing",
            subjects=[{"kind": "User", "name": f"user-{index}"}],
        )
    bind_role(admin_api, "alice-reads", "Role", "widget-reader")
    alice = UserInfo(username="alice", groups=("devs", "system:authenticated"))

    with django_assert_max_num_queries(4):
        decision = review(alice)
    with django_assert_max_num_queries(4):
        denied = review(UserInfo(username="user-3", groups=("system:authenticated",)))

    assert decision.allowed
    assert decision.reason == (
        'RBAC: allowed by RoleBinding "alice-reads" in namespace '
        '"default" of Role "widget-reader" to User "alice"'
    )
    assert denied == Decision(False, "no RBAC rule matched")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("Équipe", id="non-ascii"),
        pytest.param('quote"and\\backslash', id="json-escaped"),
        pytest.param("with space", id="space"),
        pytest.param("DEVS", id="case"),
    ],
)
def test_unusual_group_names_still_match(admin_api, name):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(
        admin_api, "team-reads", "Role", "widget-reader", subjects=[{"kind": "Group", "name": name}]
    )

    assert review(UserInfo(username="alice", groups=(name,))).allowed
    assert not review(UserInfo(username="alice", groups=(name.lower() + "x",))).allowed


def test_similar_names_do_not_match(admin_api):
    make_role(admin_api, "widget-reader", READ_WIDGETS)
    bind_role(
        admin_api,
        "alice-reads",
        "Role",
        "widget-reader",
        subjects=[{"kind": "User", "name": "alice2"}, {"kind": "User", "name": "Alice"}],
    )

    assert not review(UserInfo(username="alice")).allowed
