"""Validation of the RBAC kinds, as Kubernetes' rbac validation does it."""

from __future__ import annotations

import pytest

from tests.helpers.api import assert_status, causes

pytestmark = pytest.mark.django_db
RBAC = "/apis/rbac.authorization.k8s.io/v1"
ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"}


def crb(subjects, role_ref=None):
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "roleRef": role_ref or ROLE_REF,
        "subjects": subjects,
    }


def rb(subjects):
    return {**crb(subjects), "kind": "RoleBinding"}


def test_cluster_role_binding_may_not_reference_a_role(admin_api):
    response = admin_api.post(
        f"{RBAC}/clusterrolebindings",
        crb([{"kind": "User", "name": "u"}], {**ROLE_REF, "kind": "Role"}),
        format="json",
    )
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"roleRef.kind": "FieldValueNotSupported"}


def test_service_account_needs_a_namespace_only_in_cluster_bindings(admin_api):
    subject = [{"kind": "ServiceAccount", "name": "bot"}]
    response = admin_api.post(f"{RBAC}/clusterrolebindings", crb(subject), format="json")
    assert causes(response) == {"subjects[0].namespace": "FieldValueRequired"}
    created = admin_api.post(f"{RBAC}/namespaces/default/rolebindings", rb(subject), format="json")
    assert created.status_code == 201, created.json()


def test_user_and_group_subjects_default_their_api_group(admin_api):
    body = admin_api.post(
        f"{RBAC}/clusterrolebindings",
        crb([{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"}]),
        format="json",
    ).json()
    assert [s["apiGroup"] for s in body["subjects"]] == ["rbac.authorization.k8s.io"] * 2


@pytest.mark.parametrize(
    ("subject", "field", "reason"),
    [
        (
            {"kind": "User", "name": "u", "apiGroup": "example.com"},
            "subjects[0].apiGroup",
            "FieldValueNotSupported",
        ),
        (
            {
                "kind": "ServiceAccount",
                "name": "s",
                "namespace": "default",
                "apiGroup": "rbac.authorization.k8s.io",
            },
            "subjects[0].apiGroup",
            "FieldValueNotSupported",
        ),
        (
            {"kind": "Group", "name": "g", "namespace": "default"},
            "subjects[0].namespace",
            "FieldValueForbidden",
        ),
        ({"kind": "Robot", "name": "r"}, "subjects[0].kind", "FieldValueNotSupported"),
    ],
)
def test_bad_subjects(admin_api, subject, field, reason):
    response = admin_api.post(f"{RBAC}/clusterrolebindings", crb([subject]), format="json")
    assert_status(response, 422, "Invalid")
    assert causes(response) == {field: reason}


def test_resource_names_cannot_restrict_create(admin_api, user_api):
    admin_api.post(
        f"{RBAC}/namespaces/default/roles",
        {
            "metadata": {"name": "only-w1"},
            "rules": [
                {
                    "apiGroups": ["testing.kruntimes.io"],
                    "resources": ["widgets"],
                    "verbs": ["create"],
                    "resourceNames": ["w1"],
                }
            ],
        },
        format="json",
    )
    admin_api.post(
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "metadata": {"name": "alice"},
            "roleRef": {**ROLE_REF, "kind": "Role", "name": "only-w1"},
            "subjects": [{"kind": "User", "name": "alice"}],
        },
        format="json",
    )
    response = user_api.post(
        "/apis/testing.kruntimes.io/v1/namespaces/default/widgets",
        {"metadata": {"name": "w1"}, "spec": {"size": 1}},
        format="json",
    )
    assert_status(response, 403, "Forbidden")
