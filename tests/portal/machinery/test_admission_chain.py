"""One admission chain for every writer: REST, the admin, the CLI and a controller all go
through the store's authorize → validate → admit → persist, with a user.

Each writer gets the same denial for a user without the grant, and the same 422 for the same
bad object; the admin shows the denial as a message, not a 500.
"""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.urls import reverse

from portal.auth.identities import LOCAL_OPERATOR, register_controller
from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from portal.machinery.yaml import dump
from portal.models import Role, RoleBinding
from tests.helpers.api import shown_text, token_client
from tests.helpers.operator import OPERATOR
from tests.testapp.kinds import GROUP
from tests.testapp.models import Widget

pytestmark = pytest.mark.django_db

DENIAL = (
    'widgets.testing.kruntimes.io is forbidden: User "{user}" cannot create resource "widgets" '
    'in API group "testing.kruntimes.io" in the namespace "default"'
)
INVALID = 'Widget.testing.kruntimes.io "w" is invalid: spec.size:'


def widget(size=1) -> dict:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": size},
    }


def kind():
    return registry.for_model(Widget)


@pytest.fixture
def staff(user):
    """alice: staff, with Django's model permissions on widgets, and no RBAC grant."""
    user.is_staff = True
    user.save()
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="testapp", codename__endswith="widget")
    )
    return user


def grant_widgets(subject: str, kind: str = "User", verbs=("*",), name="widgets") -> None:
    """A Role on widgets in ``default`` bound to ``subject`` (a User or a Group)."""
    rules = [{"apiGroups": [GROUP], "resources": ["widgets"], "verbs": list(verbs)}]
    store.create(
        registry.for_model(Role),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": "default"},
            "rules": rules,
        },
        context=OPERATOR,
    )
    store.create(
        registry.for_model(RoleBinding),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": kind, "name": subject}],
        },
        context=OPERATOR,
    )


# ------------------------------------------------------------------------------ the writers
# Each returns (status code, the message a person reads) for one create of ``manifest``.


def write_rest(user, manifest):
    response = token_client(user).post(
        f"/apis/{GROUP}/v1/namespaces/default/widgets", manifest, format="json"
    )
    return response.status_code, response.json()["message"] if response.status_code >= 400 else ""


def write_admin(client, user, manifest):
    client.force_login(user)
    response = client.post(
        reverse("admin:testapp_widget_add"), {"manifest": dump(manifest), "_save": "Save"}
    )
    if response.status_code == 302:
        return 201, ""
    assert response.status_code == 200, response.status_code  # the form again, never a 500
    form = response.context["adminform"].form
    shown = " ".join(shown_text(e) for errors in form.errors.values() for e in errors)
    return (422 if "is invalid" in shown or "spec.size" in shown else 403), shown


def write_cli(username, manifest, tmp_path):
    path = tmp_path / "widget.yaml"
    path.write_text(json.dumps(manifest))
    err = io.StringIO()
    args = ["-f", str(path)] + (["--as", username] if username else [])
    try:
        call_command("apply", *args, stdout=io.StringIO(), stderr=err)
    except CommandError:
        text = err.getvalue()
        return (403 if "(Forbidden)" in text else 422), text
    return 201, ""


def write_controller(identity, manifest):
    try:
        store.create(kind(), manifest, context=store.WriteContext(user=identity))
    except StatusError as exc:
        return exc.code, exc.message
    return 201, ""


# ------------------------------------------------------------------------------ the denial


def test_every_writer_gets_the_same_denial_without_a_grant(client, staff, tmp_path):
    lazy = register_controller(
        "lazy-controller", [{"apiGroups": [GROUP], "resources": ["gadgets"], "verbs": ["create"]}]
    )
    results = {
        "rest": write_rest(staff, widget()),
        "admin": write_admin(client, staff, widget()),
        "cli": write_cli(staff.username, widget(), tmp_path),
        "controller": write_controller(lazy, widget()),
    }
    for writer, (code, shown) in results.items():
        username = lazy.username if writer == "controller" else staff.username
        assert code == 403, (writer, shown)
        assert DENIAL.format(user=username) in shown, (writer, shown)
    assert not Widget.objects.exists()


def test_the_admin_shows_the_denial_as_a_form_message_for_a_staff_user(client, staff):
    client.force_login(staff)
    page = client.get(reverse("admin:testapp_widget_changelist"))
    assert page.status_code == 200  # a staff user sees the admin...
    response = client.post(
        reverse("admin:testapp_widget_add"), {"manifest": dump(widget()), "_save": "Save"}
    )
    assert response.status_code == 200  # ...but cannot write through it: a message, not a 500
    assert "is forbidden" in response.content.decode()
    assert not Widget.objects.exists()


def test_a_grant_lets_every_writer_through(client, staff, tmp_path):
    grant_widgets(staff.username)
    assert write_rest(staff, widget())[0] == 201
    Widget.objects.all().delete()
    assert write_admin(client, staff, widget())[0] == 201
    Widget.objects.all().delete()
    assert write_cli(staff.username, widget(), tmp_path)[0] == 201
    maker = register_controller(
        "widget-maker", [{"apiGroups": [GROUP], "resources": ["widgets"], "verbs": ["create"]}]
    )
    Widget.objects.all().delete()
    assert write_controller(maker, widget())[0] == 201


# ------------------------------------------------------------------------------ the 422


def test_every_writer_gets_the_same_422_for_the_same_bad_object(client, admin_user, tmp_path):
    maker = register_controller(
        "widget-maker", [{"apiGroups": [GROUP], "resources": ["widgets"], "verbs": ["create"]}]
    )
    with pytest.raises(StatusError) as expected:
        store.create(kind(), widget(size=11), context=OPERATOR)
    message = expected.value.message
    assert expected.value.code == 422 and message.startswith(INVALID)
    results = {
        "rest": write_rest(admin_user, widget(size=11)),
        "admin": write_admin(client, admin_user, widget(size=11)),
        "cli": write_cli("", widget(size=11), tmp_path),
        "controller": write_controller(maker, widget(size=11)),
    }
    for writer, (code, shown) in results.items():
        assert code == 422, (writer, shown)
    for writer in ("rest", "cli", "controller"):
        assert message in results[writer][1], writer
    cause = expected.value.causes[0]
    assert f"{cause.field}: {cause.message}" in results["admin"][1]
    assert not Widget.objects.exists()


# ------------------------------------------------------------------------------ identities


def test_the_cli_writes_as_the_local_operator_by_default(tmp_path):
    assert write_cli("", widget(), tmp_path)[0] == 201
    assert LOCAL_OPERATOR.username == "system:admin"
    assert "system:masters" in LOCAL_OPERATOR.groups and not LOCAL_OPERATOR.is_superuser


def test_as_an_unknown_user_is_denied_like_any_user_without_a_grant(tmp_path):
    code, shown = write_cli("nobody", widget(), tmp_path)
    assert code == 403 and DENIAL.format(user="nobody") in shown


def test_as_group_gives_the_groups_of_a_binding(tmp_path):
    grant_widgets("makers", kind="Group", verbs=("create",), name="makers")
    path = tmp_path / "w.yaml"
    path.write_text(json.dumps(widget()))
    call_command(
        "apply", "-f", str(path), "--as", "carol", "--as-group", "makers", stdout=io.StringIO()
    )
    assert Widget.objects.filter(name="w").exists()


def test_as_group_without_as_is_refused(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(json.dumps(widget()))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("apply", "-f", str(path), "--as-group", "x", stderr=err)
    assert "--as-group needs --as" in err.getvalue()


def test_a_django_group_cannot_confer_a_system_group(staff):
    from django.contrib.auth.models import Group

    from portal.auth.authorizer import UserInfo

    staff.groups.add(Group.objects.create(name="system:masters"))
    assert "system:masters" not in UserInfo.of(staff).groups
    assert write_controller(staff, widget())[0] == 403


def test_a_controller_may_do_only_what_it_registered():
    from portal.machinery.gc import GARBAGE_COLLECTOR

    store.create(kind(), widget(), context=OPERATOR)
    with pytest.raises(StatusError) as denied:
        store.create(kind(), {**widget(), "metadata": {"name": "x"}}, context=GARBAGE_COLLECTOR)
    assert denied.value.code == 403
    assert "system:kruntimes:garbage-collector" in denied.value.message
    _, gone = store.delete(kind(), "default", "w", context=GARBAGE_COLLECTOR)
    assert gone


def test_a_controller_name_without_the_controllers_group_is_just_a_user():
    from portal.auth.authorizer import UserInfo

    impostor = UserInfo(username="system:kruntimes:garbage-collector")
    store.create(kind(), widget(), context=OPERATOR)
    with pytest.raises(StatusError) as denied:
        store.delete(kind(), "default", "w", context=store.WriteContext(user=impostor))
    assert denied.value.code == 403


def test_every_store_write_needs_a_context():
    with pytest.raises(TypeError):
        store.create(kind(), widget())  # type: ignore[call-arg]
