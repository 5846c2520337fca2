"""Who may invoke: the API's own tokens and authorizer. No token or a bad one is 401; a user
who may only read Runs, or whose grants are in another namespace, is 403 in kube's words,
before anything about the Run is told; answers are remembered a bounded while."""

from __future__ import annotations

import base64
import json
import time

import pytest
from rest_framework.authtoken.models import Token

from portal.auth.default_roles import default_cluster_roles
from scheduling.gateway import access
from tests.helpers.rbac import bind_role

from .conftest import TEAM_A, TEAM_B, FunctionRun
from .test_invoke import assert_failure

pytestmark = pytest.mark.django_db(transaction=True)


def test_no_token_is_401(world):
    response = world.invoke(token="")
    assert_failure(response, 401, "Unauthorized")
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="kruntimes"'
    assert world.server.functions.received == []


def test_a_token_the_portal_never_gave_is_401(world):
    assert_failure(world.invoke(token="0" * 40), 401, "Unauthorized")
    assert_failure(world.invoke(token="not a token at all"), 401, "Unauthorized")
    assert world.server.functions.received == []


def test_the_admin_and_an_editor_may_invoke(world):
    assert world.invoke(token=world.admin).status_code == 200
    assert world.invoke(token=world.alice).status_code == 200


def test_a_reader_of_runs_is_403_in_kubes_words(world):
    body = assert_failure(world.invoke(token=world.bob), 403, "Forbidden")
    assert body["message"].startswith(
        'runs.kruntimes.io "fn" is forbidden: User "bob" cannot create resource "runs/invoke" '
        'in API group "kruntimes.io" in the namespace "team-a"'
    )
    assert body["details"]["name"] == "fn"
    assert world.server.functions.received == []


def test_grants_in_one_namespace_invoke_nothing_in_another(world):
    body = assert_failure(world.invoke(world.other), 403, "Forbidden")
    assert f'in the namespace "{TEAM_B}"' in body["message"]
    assert world.invoke(world.other, token=world.admin).status_code == 200


def test_whether_a_run_exists_is_told_only_to_who_may_invoke_it(world):
    missing = FunctionRun(TEAM_B, "nothing-here", world.other.uid)
    # in a namespace alice has no grant in: 403 whether the Run exists or not
    assert world.invoke(missing).status_code == world.invoke(world.other).status_code == 403
    # where she may invoke: 404
    assert_failure(
        world.invoke(FunctionRun(TEAM_A, "nothing-here", world.run.uid)), 404, "NotFound"
    )


def test_a_role_granting_runs_invoke_is_what_it_takes(world, admin_api):
    from tests.helpers.rbac import make_role

    make_role(
        admin_api,
        "invoker",
        [{"apiGroups": ["kruntimes.io"], "resources": ["runs/invoke"], "verbs": ["create"]}],
        namespace=TEAM_B,
    )
    bind_role(admin_api, "alice-invokes", "Role", "invoker", namespace=TEAM_B)
    access.clear()  # a denial is remembered a few seconds
    assert world.invoke(world.other).status_code == 200


def test_a_revoked_token_is_refused_once_its_answer_is_forgotten(world):
    assert world.invoke().status_code == 200
    Token.objects.filter(key=world.alice).delete()
    access.identities.clear()  # what a process forgets after at most 30 s
    assert_failure(world.invoke(), 401, "Unauthorized")


def test_answers_are_kept_by_digest_never_by_token(world):
    assert world.invoke().status_code == 200
    assert len(access.identities) == 1 and len(access.decisions) == 1
    kept = repr(access.identities._entries) + repr(access.decisions._entries)
    assert world.alice not in kept


def jwt(payload: dict) -> str:
    part = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJSUzI1NiJ9.{part}.c2ln"


def test_an_answer_is_never_kept_past_the_expiry_a_jwt_states():
    soon = time.time() + 10
    assert access._keep_for(f"Bearer {jwt({'exp': soon})}") <= 10
    assert access._keep_for(f"Bearer {jwt({'exp': time.time() - 1})}") <= 0
    assert access._keep_for(f"Bearer {jwt({'sub': 'x'})}") == access.AUTHENTICATED_SECONDS
    assert access._keep_for("Bearer " + "a" * 40) == access.AUTHENTICATED_SECONDS


def test_edit_and_admin_grant_runs_invoke_and_view_does_not():
    roles = default_cluster_roles()

    def may(role: str, verb: str) -> bool:
        return any(
            "runs/invoke" in rule.get("resources", []) and verb in rule["verbs"]
            for rule in roles[role]
        )

    assert may("edit", "create") and may("admin", "create")
    assert not any("runs/invoke" in rule.get("resources", []) for rule in roles["view"])
