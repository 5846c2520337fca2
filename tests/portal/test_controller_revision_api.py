"""apps/v1 ControllerRevision as Kubernetes validates it (``data`` mandatory and immutable,
``revision`` non-negative), and the default roles: every one reads them, none writes them."""

from __future__ import annotations

import pytest

from portal.auth.default_roles import default_cluster_roles
from tests.helpers.rbac import ALICE, bind_role
from tests.helpers.runs import causes, merge_patch

pytestmark = pytest.mark.django_db

REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"


def revision(name="r", **body) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name},
        **body,
    }


def post(api, body):
    return api.post(REVISIONS, body, format="json")


def test_a_revision_keeps_any_json_data_and_its_number(admin_api):
    response = post(admin_api, revision(data={"spec": {"a": [1, "x"]}}, revision=3))
    assert response.status_code == 201, response.json()
    got = admin_api.get(f"{REVISIONS}/r").json()
    assert (got["data"], got["revision"]) == ({"spec": {"a": [1, "x"]}}, 3)


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "data"),
        ({"data": {}, "revision": -1}, "revision"),
        ({"data": {}, "revision": "1"}, "revision"),
    ],
    ids=["no-data", "negative", "not-an-integer"],
)
def test_a_bad_revision_is_a_422_at_the_field(admin_api, body, field):
    response = post(admin_api, revision(**body))
    assert response.status_code == 422
    assert field in causes(response)


def test_data_never_changes_and_the_rest_may(admin_api):
    assert post(admin_api, revision(data={"v": 1}, revision=1)).status_code == 201
    changed = merge_patch(admin_api, f"{REVISIONS}/r", {"data": {"v": 2}, "revision": 2})
    assert changed.status_code == 422
    assert causes(changed) == {"data": "FieldValueInvalid"}
    assert merge_patch(admin_api, f"{REVISIONS}/r", {"revision": 2}).status_code == 200


@pytest.mark.parametrize("role", ["view", "edit", "admin"])
def test_the_default_roles_read_revisions_and_write_none(admin_api, user_api, role):
    rules = [r for r in default_cluster_roles()[role] if "apps" in r["apiGroups"]]
    assert [(r["resources"], r["verbs"]) for r in rules] == [
        (["controllerrevisions"], ["get", "list", "watch"])
    ]
    assert post(admin_api, revision(data={})).status_code == 201
    bind_role(admin_api, "alice", "ClusterRole", role, ALICE)
    assert user_api.get(f"{REVISIONS}/r").status_code == 200
    assert post(user_api, revision("mine", data={})).status_code == 403
    assert merge_patch(user_api, f"{REVISIONS}/r", {"revision": 5}).status_code == 403
