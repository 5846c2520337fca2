"""The built-in view/edit/admin ClusterRoles: view never reads Secrets, edit and admin do;
secrets and configmaps are authorized like any kind."""

from __future__ import annotations

import pytest

from portal.auth.default_roles import AUTOUPDATE, ensure_default_cluster_roles
from portal.models import ClusterRole
from tests.helpers.rbac import bind_role
from tests.helpers.secrets import VALUE_B64, config_map, config_maps_url, secret, secrets_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def objects(admin_api):
    assert (
        admin_api.post(secrets_url(), secret("s1", {"k": VALUE_B64}), format="json").status_code
        == 201
    )
    assert (
        admin_api.post(config_maps_url(), config_map("c1", {"k": "v"}), format="json").status_code
        == 201
    )


def test_the_roles_exist_after_migrate():
    assert set(ClusterRole.objects.values_list("name", flat=True)) >= {"view", "edit", "admin"}


def test_view_reads_config_maps_but_not_secrets(admin_api, user_api, objects):
    bind_role(admin_api, "alice-view", "ClusterRole", "view")

    assert user_api.get(config_maps_url(name="c1")).status_code == 200
    assert user_api.get(config_maps_url()).status_code == 200
    assert user_api.get(secrets_url(name="s1")).status_code == 403
    assert user_api.get(secrets_url()).status_code == 403
    denied = user_api.post(config_maps_url(), config_map("c2"), format="json")
    assert denied.status_code == 403


@pytest.mark.parametrize("role", ["edit", "admin"])
def test_edit_and_admin_read_and_write_secrets(admin_api, user_api, objects, role):
    bind_role(admin_api, f"alice-{role}", "ClusterRole", role)

    assert user_api.get(secrets_url(name="s1")).json()["data"] == {"k": VALUE_B64}
    created = user_api.post(secrets_url(), secret("s2", {"k": VALUE_B64}), format="json")
    assert created.status_code == 201
    assert user_api.delete(secrets_url(name="s2")).status_code == 200


def test_no_role_no_secrets(user_api, objects):
    assert user_api.get(secrets_url(name="s1")).status_code == 403


def test_an_auto_updated_role_is_restored_and_an_opted_out_one_kept():
    ClusterRole.objects.filter(name="view").update(rules=[])
    ClusterRole.objects.filter(name="edit").update(rules=[], annotations={AUTOUPDATE: "false"})

    assert ensure_default_cluster_roles() == 1

    assert ClusterRole.objects.get(name="view").rules
    assert ClusterRole.objects.get(name="edit").rules == []
