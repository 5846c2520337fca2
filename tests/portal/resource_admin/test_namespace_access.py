"""A staff user's admin pages hold what RBAC lets them list: Django's model permission opens
the Run pages, RBAC decides which namespaces' Runs are on them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from portal.models import Namespace
from tests.helpers.rbac import bind_role, make_role
from tests.helpers.records import make_run, make_runtime

pytestmark = pytest.mark.django_db
RUN_LISTER = [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["list"]}]


@pytest.fixture
def two_teams():
    Namespace.objects.get_or_create(name="team-b")
    make_runtime(name="bash", namespace="default")
    make_runtime(name="bash", namespace="team-b")
    return make_run("ours", namespace="default"), make_run("theirs", namespace="team-b")


@pytest.fixture
def ops(client, django_user_model, admin_api, two_teams):
    staff = django_user_model.objects.create_user("ops", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_run"))
    make_role(admin_api, "run-lister", RUN_LISTER, namespace="team-b")
    subjects = [{"kind": "User", "name": "ops", "apiGroup": "rbac.authorization.k8s.io"}]
    bind_role(admin_api, "ops-runs", "Role", "run-lister", subjects, namespace="team-b")
    client.force_login(staff)
    return client


def test_the_run_list_holds_only_the_namespaces_rbac_lets_the_user_list(ops, two_teams):
    page = ops.get(reverse("admin:scheduling_run_changelist")).content.decode()
    assert "theirs" in page and "ours" not in page


def test_a_run_of_a_namespace_not_granted_is_not_found_on_its_page(ops, two_teams):
    ours, theirs = two_teams
    shown = ops.get(reverse("admin:scheduling_run_change", args=[theirs.pk]))
    assert shown.status_code == 200 and "theirs" in shown.content.decode()
    hidden = ops.get(reverse("admin:scheduling_run_change", args=[ours.pk]), follow=True)
    assert "ours" not in hidden.content.decode().split('id="content"')[-1].split("</h1>")[0]
    assert hidden.redirect_chain and hidden.redirect_chain[-1][0] == reverse("admin:index")


def test_a_superuser_sees_every_namespace(admin_client, two_teams):
    page = admin_client.get(reverse("admin:scheduling_run_changelist")).content.decode()
    assert "theirs" in page and "ours" in page
