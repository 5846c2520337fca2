"""RBAC escalation prevention over the API: a user who may write roles and bindings cannot
grant (itself or anyone) what it does not hold, unless it has ``escalate`` or ``bind``."""

from __future__ import annotations

import pytest

from portal.models import Namespace
from tests.helpers.api import token_client
from tests.helpers.rbac import ALICE, RBAC, binding_body, make_cluster_role, make_role

pytestmark = pytest.mark.django_db

RBAC_GROUP = "rbac.authorization.k8s.io"
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/ci/runs"
EVERYTHING = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
CONTROLLER = [{"apiGroups": ["kruntimes.io"], "resources": ["*"], "verbs": ["*"]}]
READ_RUNS = [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["get", "list"]}]
WRITE_RBAC = [
    {
        "apiGroups": [RBAC_GROUP],
        "resources": ["roles", "rolebindings"],
        "verbs": ["get", "list", "create", "update", "patch"],
    }
]
WRITE_CLUSTER_RBAC = [
    {
        "apiGroups": [RBAC_GROUP],
        "resources": ["clusterroles", "clusterrolebindings"],
        "verbs": ["get", "list", "create", "update", "patch"],
    }
]


@pytest.fixture
def setup(admin_api, user):
    """alice may write Roles and RoleBindings in "ci", and read Runs there."""
    for name in ("ci", "other"):
        Namespace.objects.get_or_create(name=name, defaults={"spec": {"finalizers": []}})
    make_cluster_role(admin_api, "kruntimes-controller", CONTROLLER)
    make_cluster_role(admin_api, "cluster-admin", EVERYTHING)
    make_cluster_role(admin_api, "run-reader", READ_RUNS)
    make_role(admin_api, "rbac-writer", WRITE_RBAC + READ_RUNS, namespace="ci")
    bind(admin_api, "RoleBinding", "alice-rbac", "Role", "rbac-writer", namespace="ci")
    return token_client(user)


def bind(api, kind, name, role_kind, role_name, namespace="ci", subjects=ALICE):
    url = (
        f"{RBAC}/namespaces/{namespace}/rolebindings"
        if kind == "RoleBinding"
        else f"{RBAC}/clusterrolebindings"
    )
    return api.post(url, binding_body(kind, name, role_kind, role_name, subjects), format="json")


def role(api, name, rules, namespace="ci"):
    return api.post(
        f"{RBAC}/namespaces/{namespace}/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name},
            "rules": rules,
        },
        format="json",
    )


def forbidden(response) -> str:
    body = response.json()
    assert (response.status_code, body["kind"], body["reason"]) == (403, "Status", "Forbidden"), (
        body
    )
    return body["message"]


def test_binding_oneself_to_the_controller_role_is_refused(setup):
    message = forbidden(bind(setup, "RoleBinding", "mine", "ClusterRole", "kruntimes-controller"))
    assert "not currently held" in message and '"bind"' in message
    # and so the forged /status write stays forbidden
    forbidden(
        setup.patch(
            f"{RUNS}/r/status",
            '{"status": {"phase": "Succeeded"}}',
            content_type="application/merge-patch+json",
        )
    )


def test_binding_oneself_to_cluster_admin_is_refused(setup):
    forbidden(bind(setup, "RoleBinding", "mine", "ClusterRole", "cluster-admin"))


def test_creating_a_wildcard_role_is_refused(setup):
    message = forbidden(role(setup, "everything", EVERYTHING))
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in message
    assert '"escalate"' in message


def test_a_role_with_only_what_one_holds_is_allowed(setup):
    assert role(setup, "readers", READ_RUNS).status_code == 201
    narrower = [
        {
            "apiGroups": ["kruntimes.io"],
            "resources": ["runs"],
            "verbs": ["get"],
            "resourceNames": ["r1"],
        }
    ]
    assert role(setup, "one-run", narrower).status_code == 201


def test_a_role_widening_one_held_rule_is_refused(setup):
    for wider in (
        [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["get", "delete"]}],
        [{"apiGroups": ["kruntimes.io"], "resources": ["runs/status"], "verbs": ["update"]}],
        [{"apiGroups": ["kruntimes.io"], "resources": ["*"], "verbs": ["get"]}],
        [{"apiGroups": ["*"], "resources": ["runs"], "verbs": ["get"]}],
        [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    ):
        forbidden(role(setup, "wider", wider))


def test_binding_a_role_one_holds_is_allowed_in_that_namespace_only(setup):
    assert bind(setup, "RoleBinding", "read", "ClusterRole", "run-reader").status_code == 201
    bob = [{"kind": "User", "name": "bob", "apiGroup": RBAC_GROUP}]
    assert (
        bind(
            setup, "RoleBinding", "bob-read", "ClusterRole", "run-reader", subjects=bob
        ).status_code
        == 201
    )


def test_binding_a_role_that_does_not_exist_is_refused(setup):
    assert "not found" in forbidden(bind(setup, "RoleBinding", "x", "ClusterRole", "nope"))


def test_updating_a_role_to_grant_more_is_refused_but_relabelling_is_not(setup):
    assert role(setup, "readers", READ_RUNS).status_code == 201
    url = f"{RBAC}/namespaces/ci/roles/readers"
    patch = '{"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}'
    forbidden(setup.patch(url, patch, content_type="application/merge-patch+json"))
    relabel = setup.patch(
        url, '{"metadata": {"labels": {"team": "ci"}}}', content_type="application/merge-patch+json"
    )
    assert relabel.status_code == 200, relabel.json()


def test_the_escalate_verb_allows_granting_more(setup, admin_api):
    make_role(
        admin_api,
        "escalator",
        [{"apiGroups": [RBAC_GROUP], "resources": ["roles"], "verbs": ["escalate"]}],
        namespace="ci",
    )
    bind(admin_api, "RoleBinding", "alice-escalate", "Role", "escalator")
    assert role(setup, "everything", EVERYTHING).status_code == 201


def test_the_bind_verb_allows_binding_that_role_only(setup, admin_api):
    make_role(
        admin_api,
        "binder",
        [
            {
                "apiGroups": [RBAC_GROUP],
                "resources": ["clusterroles"],
                "verbs": ["bind"],
                "resourceNames": ["run-reader", "kruntimes-controller"],
            }
        ],
        namespace="ci",
    )
    bind(admin_api, "RoleBinding", "alice-bind", "Role", "binder")
    assert (
        bind(setup, "RoleBinding", "ctl", "ClusterRole", "kruntimes-controller").status_code == 201
    )
    forbidden(bind(setup, "RoleBinding", "admin", "ClusterRole", "cluster-admin"))


@pytest.mark.parametrize("kind", ["ClusterRole", "ClusterRoleBinding"])
def test_cluster_scope_needs_permissions_held_cluster_wide(setup, admin_api, kind):
    make_cluster_role(admin_api, "cluster-rbac-writer", WRITE_CLUSTER_RBAC)
    bind(
        admin_api, "ClusterRoleBinding", "alice-cluster-rbac", "ClusterRole", "cluster-rbac-writer"
    )
    if kind == "ClusterRole":
        # alice reads runs in "ci" only: a ClusterRole granting it everywhere is more
        response = setup.post(
            f"{RBAC}/clusterroles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "readers"},
                "rules": READ_RUNS,
            },
            format="json",
        )
    else:
        response = bind(setup, "ClusterRoleBinding", "mine", "ClusterRole", "run-reader")
    forbidden(response)


def test_a_superuser_may_grant_anything(admin_api, setup):
    assert role(admin_api, "everything", EVERYTHING).status_code == 201
    assert (
        bind(admin_api, "RoleBinding", "alice-all", "ClusterRole", "cluster-admin").status_code
        == 201
    )


def test_a_refused_grant_writes_nothing(setup, admin_api):
    forbidden(bind(setup, "RoleBinding", "mine", "ClusterRole", "cluster-admin"))
    forbidden(role(setup, "everything", EVERYTHING))
    assert admin_api.get(f"{RBAC}/namespaces/ci/rolebindings/mine").status_code == 404
    assert admin_api.get(f"{RBAC}/namespaces/ci/roles/everything").status_code == 404
