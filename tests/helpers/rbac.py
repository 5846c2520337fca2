"""RBAC through the REST API: roles and bindings an admin writes, and the Status a denied user gets."""

from __future__ import annotations

RBAC = "/apis/rbac.authorization.k8s.io/v1"


TESTING = "testing.kruntimes.io"


API = f"/apis/{TESTING}/v1"


ALICE = [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]


READ_WIDGETS = [{"apiGroups": [TESTING], "resources": ["widgets"], "verbs": ["get", "list"]}]


def widgets(namespace: str = "default") -> str:
    return f"{API}/namespaces/{namespace}/widgets"


def created(response) -> dict:
    assert response.status_code == 201, response.json()
    return response.json()


def make_role(api, name, rules, namespace="default"):
    return created(
        api.post(
            f"{RBAC}/namespaces/{namespace}/roles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name},
                "rules": rules,
            },
            format="json",
        )
    )


def make_cluster_role(api, name, rules):
    return created(
        api.post(
            f"{RBAC}/clusterroles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules,
            },
            format="json",
        )
    )


def binding_body(kind, name, role_kind, role_name, subjects, **metadata):
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, **metadata},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }


def bind_role(api, name, role_kind, role_name, subjects=ALICE, namespace="default", **metadata):
    return created(
        api.post(
            f"{RBAC}/namespaces/{namespace}/rolebindings",
            binding_body("RoleBinding", name, role_kind, role_name, subjects, **metadata),
            format="json",
        )
    )


def bind_cluster_role(api, name, role_name, subjects=ALICE):
    return created(
        api.post(
            f"{RBAC}/clusterrolebindings",
            binding_body("ClusterRoleBinding", name, "ClusterRole", role_name, subjects),
            format="json",
        )
    )


def make_widget(api, name, namespace="default"):
    return created(
        api.post(
            widgets(namespace),
            {
                "apiVersion": f"{TESTING}/v1",
                "kind": "Widget",
                "metadata": {"name": name},
                "spec": {"size": 1},
            },
            format="json",
        )
    )


def assert_forbidden(response, *fragments):
    assert response.status_code == 403, response.json()
    status = response.json()
    assert status["kind"] == "Status"
    assert status["status"] == "Failure"
    assert status["reason"] == "Forbidden"
    assert status["code"] == 403
    for fragment in fragments:
        assert fragment in status["message"]
    return status


def assert_unauthorized(response):
    assert response.status_code == 401
    status = response.json()
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Unauthorized", 401)
