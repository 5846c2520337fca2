"""A Run's workspace reference is admitted on create by every writer (seed 002, permission
boundary rules 1-2): the workspace exists, matches the Runtime, and the writer may ``use`` it."""

from __future__ import annotations

import io
import json
import time

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.urls import reverse

from portal.machinery import admission, store
from portal.machinery.admission import WriteContext
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from portal.machinery.yaml import dump
from portal.models import Role
from scheduling.models import Run
from tests.helpers.api import shown_text, token_client
from tests.helpers.operator import OPERATOR
from tests.helpers.runs import runs_url
from tests.helpers.workspace_access import (
    bind_role,
    grant_runs,
    grant_use,
    kind,
    make_role,
    workspace_run,
)
from tests.helpers.workspaces import make_workspace
from workspaces import review

pytestmark = pytest.mark.django_db

DENIAL = (
    'persistentworkspaces.kruntimes.io "ws" is forbidden: User "alice" cannot use resource '
    '"persistentworkspaces/use" in API group "kruntimes.io" in the namespace "default"'
)


def create(manifest, user=OPERATOR.user, dry_run=False):
    return store.create(kind("Run"), manifest, context=WriteContext(user=user, dry_run=dry_run))


def refusal(manifest, user=OPERATOR.user, dry_run=False) -> StatusError:
    with pytest.raises(StatusError) as caught:
        create(manifest, user, dry_run)
    return caught.value


# ------------------------------------------------------------------ existence and Runtime


def test_a_missing_workspace_is_invalid_not_pending():
    error = refusal(workspace_run(workspace="missing"))

    assert (error.code, error.reason) == (422, "Invalid")
    (cause,) = error.causes
    assert (cause.field, cause.reason) == ("spec.workspace.name", "FieldValueNotFound")
    assert cause.message == 'persistentworkspaces.kruntimes.io "missing" not found'
    assert not Run.objects.exists()


def test_a_workspace_of_another_namespace_is_not_found():
    store.create(
        registry.get("", "v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}},
        context=OPERATOR,
    )
    make_workspace("ws", namespace="team-b")

    error = refusal(workspace_run())

    assert error.code == 422
    assert error.causes[0].reason == "FieldValueNotFound"


def test_a_workspace_of_another_runtime_is_invalid():
    make_workspace("ws", runtime="python")

    error = refusal(workspace_run(runtime="bash"))

    assert (error.code, error.reason) == (422, "Invalid")
    fields = {cause.field for cause in error.causes}
    assert fields == {"spec.workspace.name", "spec.runtime"}
    assert 'belongs to Runtime "python"' in error.message
    assert not Run.objects.exists()


def test_a_matching_workspace_is_admitted_for_the_operator():
    make_workspace("ws")

    run = create(workspace_run())

    assert run.spec["workspace"]["name"] == "ws"


def test_the_rest_api_answers_422_for_a_missing_workspace(admin_api):
    response = admin_api.post(runs_url(), workspace_run(workspace="nope"), format="json")

    assert response.status_code == 422, response.json()
    assert response.json()["details"]["causes"][0]["field"] == "spec.workspace.name"


def test_runs_without_a_workspace_are_not_reviewed(user):
    grant_runs()

    assert create(workspace_run_without(), user).name == "r"


def workspace_run_without():
    manifest = workspace_run()
    del manifest["spec"]["workspace"]
    return manifest


def test_an_update_is_not_reviewed_again(user):
    """spec.workspace is immutable; a later write (ttl) needs no ``use``."""
    make_workspace("ws")
    run = create(workspace_run())
    grant_runs()
    Role.objects.filter(name="run-writer").update(
        rules=[{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["*"]}]
    )

    patched = store.patch(
        kind("Run"),
        "default",
        run.name,
        {"spec": {"ttlSecondsAfterFinished": 5}},
        context=WriteContext(user=user),
    )

    assert patched.spec["ttlSecondsAfterFinished"] == 5


# ------------------------------------------------------------------ the use review


def test_a_user_without_use_is_forbidden(user):
    make_workspace("ws")
    grant_runs()

    error = refusal(workspace_run(), user)

    assert (error.code, error.reason) == (403, "Forbidden")
    assert DENIAL in error.message
    assert [c.field for c in error.causes] == ["spec.workspace.name"]
    assert (error.kind, error.group, error.name) == ("persistentworkspaces", "kruntimes.io", "ws")
    assert not Run.objects.exists()


def test_a_dry_run_is_reviewed_too(user):
    make_workspace("ws")
    grant_runs()

    assert refusal(workspace_run(), user, dry_run=True).code == 403
    assert refusal(workspace_run(workspace="gone"), user, dry_run=True).code == 422


def test_use_limited_by_resource_names_allows_exactly_that_workspace(user):
    make_workspace("ws")
    make_workspace("other")
    grant_runs()
    grant_use(["ws"])

    assert create(workspace_run("r1", "ws"), user).name == "r1"
    error = refusal(workspace_run("r2", "other"), user)
    assert error.code == 403 and '"other" is forbidden' in error.message


def test_use_on_every_workspace_of_the_namespace(user):
    make_workspace("ws")
    make_workspace("other")
    grant_runs()
    grant_use()

    assert create(workspace_run("r1", "ws"), user)
    assert create(workspace_run("r2", "other"), user)


def test_get_on_the_workspace_is_not_use(user):
    make_workspace("ws")
    grant_runs()
    make_role(
        "ws-reader",
        [{"apiGroups": ["kruntimes.io"], "resources": ["persistentworkspaces"], "verbs": ["*"]}],
    )
    bind_role("ws-reader", "ws-reader")

    assert refusal(workspace_run(), user).code == 403


# ------------------------------------------------------------------ every writer


@pytest.fixture
def staff(user):
    user.is_staff = True
    user.save()
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="scheduling", codename__endswith="_run")
    )
    grant_runs()
    make_workspace("ws")
    return user


def test_rest_without_use_is_403(staff):
    response = token_client(staff).post(runs_url(), workspace_run(), format="json")

    assert response.status_code == 403, response.json()
    body = response.json()
    assert body["reason"] == "Forbidden" and DENIAL in body["message"]
    assert body["details"]["causes"][0]["field"] == "spec.workspace.name"


def test_rest_with_use_is_201(staff):
    grant_use(["ws"])

    response = token_client(staff).post(runs_url(), workspace_run(), format="json")

    assert response.status_code == 201, response.json()


def test_admin_without_use_shows_the_denial(client, staff):
    client.force_login(staff)
    response = client.post(
        reverse("admin:scheduling_run_add"), {"manifest": dump(workspace_run()), "_save": "Save"}
    )

    assert response.status_code == 200  # the form again, never a 500
    shown = " ".join(
        shown_text(e) for errs in response.context["adminform"].form.errors.values() for e in errs
    )
    assert DENIAL in shown
    assert not Run.objects.exists()


def test_cli_without_use_is_forbidden(staff, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        json.dumps({**workspace_run(), "metadata": {"name": "r", "namespace": "default"}})
    )
    err = io.StringIO()

    with pytest.raises(CommandError):
        call_command("apply", "-f", str(path), "--as", "alice", stdout=io.StringIO(), stderr=err)

    assert "(Forbidden)" in err.getvalue() and DENIAL in err.getvalue()
    assert not Run.objects.exists()


def test_cli_with_use_applies(staff, tmp_path):
    grant_use(["ws"])
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(workspace_run()))

    call_command(
        "apply", "-f", str(path), "--as", "alice", stdout=io.StringIO(), stderr=io.StringIO()
    )

    assert Run.objects.filter(name="r").exists()


# ------------------------------------------------------------------ SubjectAccessReview


@pytest.fixture
def sar_user(user, access_reviews, sar_backend, settings):
    """alice, authorized by the cluster: every review is answered by ``access_reviews``."""
    make_workspace("ws")
    return user


def test_sar_use_review_is_asked_and_allows(sar_user, access_reviews):
    access_reviews.allow()

    assert create(workspace_run(), sar_user).name == "r"
    use = access_reviews.bodies[-1]["spec"]["resourceAttributes"]
    assert (use["verb"], use["resource"], use["subresource"], use["name"]) == (
        "use",
        "persistentworkspaces",
        "use",
        "ws",
    )


def test_sar_timeout_is_a_denial(sar_user, access_reviews, settings, monkeypatch):
    settings.KRUNTIMES_SAR_TIMEOUT_SECONDS = 30.0
    monkeypatch.setattr(review, "USE_REVIEW_SECONDS", 0.3)
    access_reviews.allow()

    # the create authorization is asked first, then the use review: hold from the second on
    real = admission.authorize

    def authorize_then_hold(*args, **kwargs):
        result = real(*args, **kwargs)
        access_reviews.hold()
        return result

    monkeypatch.setattr("portal.machinery.store.authorize", authorize_then_hold)

    started = time.monotonic()
    error = refusal(workspace_run(), sar_user)

    assert error.code == 403
    assert "authorization check failed: no answer within 0.3s" in error.message
    assert time.monotonic() - started < 2.0
    assert not Run.objects.exists()


def test_sar_error_is_a_denial(sar_user, access_reviews, monkeypatch):
    real = admission.authorize

    def authorize_then_fail(*args, **kwargs):
        result = real(*args, **kwargs)
        access_reviews.fail(500)
        return result

    monkeypatch.setattr("portal.machinery.store.authorize", authorize_then_fail)

    error = refusal(workspace_run(), sar_user)

    assert error.code == 403 and "HTTP 500" in error.message
