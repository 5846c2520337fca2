"""A Run's artifact inputs stay in its namespace (issue 27, item 7): a ref into another
namespace needs ``get runs/artifacts`` there, asked at admission as the workspace ``use``
review is; a ref whose namespace cannot be told is Invalid; no refusal tells a digest."""

from __future__ import annotations

import hashlib
import json

import pytest

from portal.machinery import store
from portal.machinery.admission import WriteContext
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from runtimed.protocol import ref_namespace
from scheduling.models import Run
from tests.helpers.api import token_client
from tests.helpers.operator import OPERATOR
from tests.helpers.runs import DIGEST, artifact_ref, run_manifest, runs_url
from tests.helpers.workspace_access import bind_role, grant_runs, kind, make_role

pytestmark = pytest.mark.django_db

FIELD = "spec.artifactInputs[0].location"
ARTIFACT_READER = [
    {"apiGroups": ["kruntimes.io"], "resources": ["runs/artifacts"], "verbs": ["get"]}
]


def fs_ref(namespace: str, name: str = "secret.txt", uid: str = "u-1") -> dict:
    return artifact_ref(
        name, location={"filesystem": {"path": f"namespaces/{namespace}/runs/{uid}/{name}"}}
    )


def s3_ref(key: str, name: str = "secret.txt") -> dict:
    return artifact_ref(name, driver="s3", location={"s3": {"bucket": "b", "key": key}})


def input_run(*refs: dict, name: str = "r") -> dict:
    inputs = [{"ref": ref, "path": f"in/{index}"} for index, ref in enumerate(refs)]
    return run_manifest(name, artifactInputs=inputs)


def create(manifest: dict, user=OPERATOR.user):
    return store.create(kind("Run"), manifest, context=WriteContext(user=user))


def refusal(manifest: dict, user=OPERATOR.user) -> StatusError:
    with pytest.raises(StatusError) as caught:
        create(manifest, user)
    assert not Run.objects.exists()
    return caught.value


@pytest.fixture
def team_b():
    store.create(
        registry.get("", "v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}},
        context=OPERATOR,
    )
    return "team-b"


@pytest.fixture
def alice(user):
    """May create Runs in ``default``; nothing in team-b."""
    grant_runs()
    return user


def grant_artifacts(namespace: str, user: str = "alice") -> None:
    make_role("artifact-reader", ARTIFACT_READER, namespace)
    bind_role("artifact-reader", "artifact-reader", user, namespace)


# ------------------------------------------------------------------ which namespace


@pytest.mark.parametrize(
    ("ref", "namespace"),
    [
        (fs_ref("team-b"), "team-b"),
        (artifact_ref(location={"filesystem": {"path": "namespaces/a/runs/u/../u/x"}}), "a"),
        (s3_ref("namespaces/team-b/runs/u/x"), "team-b"),
        (s3_ref("ci/prefix/namespaces/team-b/runs/u/x"), "team-b"),
        (s3_ref("namespaces/default/runs/u/namespaces/team-b/runs/u/x"), "team-b"),
        (artifact_ref(location={"filesystem": {"path": "runs/u/x"}}), None),
        (artifact_ref(location={"filesystem": {"path": "x/namespaces/a/runs/u/x"}}), None),
        (artifact_ref(location={"filesystem": {"path": "namespaces/a/b/u/x"}}), None),
        (artifact_ref(location={"filesystem": {"path": "/namespaces/a/runs/u/x"}}), None),
        (s3_ref("k/x"), None),
        (s3_ref("namespaces/../runs/u/x"), None),
        (artifact_ref(location={"s3": {"bucket": "b", "key": "namespaces/a/runs/u/x"}}), None),
        ({"driver": "filesystem"}, None),
        ("not a ref", None),
    ],
)
def test_the_namespace_a_ref_points_into(ref, namespace):
    assert ref_namespace(ref) == namespace


# ------------------------------------------------------------------ admission


def test_a_ref_into_the_runs_own_namespace_is_admitted(alice):
    run = create(input_run(fs_ref("default"), s3_ref("p/namespaces/default/runs/u/x")), alice)

    assert len(run.spec["artifactInputs"]) == 2


def test_a_ref_into_another_namespace_is_forbidden_without_access(alice, team_b):
    error = refusal(input_run(fs_ref("default", "mine"), fs_ref(team_b)), alice)

    assert (error.code, error.reason) == (403, "Forbidden")
    assert [(c.field, c.reason) for c in error.causes] == [
        ("spec.artifactInputs[1].location", "FieldValueForbidden")
    ]
    assert (
        'User "alice" cannot get resource "runs/artifacts" in API group "kruntimes.io" '
        'in the namespace "team-b"' in error.message
    )


def test_artifact_access_in_the_runs_own_namespace_does_not_reach_another(alice, team_b):
    grant_artifacts("default")

    assert refusal(input_run(fs_ref(team_b)), alice).code == 403


def test_get_on_runs_in_the_target_namespace_is_not_artifact_access(alice, team_b):
    make_role(
        "run-reader",
        [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["get"]}],
        team_b,
    )
    bind_role("run-reader", "run-reader", "alice", team_b)

    assert refusal(input_run(fs_ref(team_b)), alice).code == 403


def test_get_runs_artifacts_in_the_target_namespace_admits_it(alice, team_b):
    grant_artifacts(team_b)

    run = create(input_run(fs_ref(team_b), s3_ref("namespaces/team-b/runs/u/y")), alice)

    assert run.name == "r"


@pytest.mark.parametrize(
    "ref",
    [
        artifact_ref(location={"filesystem": {"path": "runs/u/secret.txt"}}),
        s3_ref("k/secret.txt"),
    ],
    ids=["filesystem", "s3"],
)
def test_a_ref_whose_namespace_cannot_be_told_is_invalid(alice, ref):
    error = refusal(input_run(fs_ref("default", "mine"), ref), alice)

    assert (error.code, error.reason) == (422, "Invalid")
    assert [(c.field, c.reason) for c in error.causes] == [
        ("spec.artifactInputs[1].location", "FieldValueInvalid")
    ]


def test_the_operator_too_cannot_name_an_unknown_namespace():
    assert refusal(input_run(s3_ref("k/x"))).code == 422


def test_no_refusal_tells_a_digest(alice, team_b):
    told = "sha256:" + hashlib.sha256(b"team-b's secret").hexdigest()
    refs = (fs_ref(team_b), s3_ref("k/x", "y"))
    for ref in refs:
        error = refusal(input_run({**ref, "digest": told}), alice)
        text = json.dumps(error.to_status(), default=str)
        assert told.removeprefix("sha256:")[:16] not in text
        assert error.code in (403, 422)


# ------------------------------------------------------------------ every writer


def test_the_rest_api_answers_a_forbidden_status_at_the_field(alice, team_b):
    response = token_client(alice).post(runs_url(), input_run(fs_ref(team_b)), format="json")

    assert response.status_code == 403, response.json()
    status = response.json()
    assert (status["kind"], status["reason"]) == ("Status", "Forbidden")
    assert [c["field"] for c in status["details"]["causes"]] == [FIELD]
    assert DIGEST.removeprefix("sha256:") not in response.content.decode()


def test_the_webhook_refuses_a_ref_into_another_namespace(admin_user, team_b):
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "uid-7",
            "kind": {"group": "kruntimes.io", "version": "v1alpha1", "kind": "Run"},
            "resource": {"group": "kruntimes.io", "version": "v1alpha1", "resource": "runs"},
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": input_run(fs_ref(team_b)),
        },
    }
    client = token_client(admin_user)

    refused = client.post("/apis/admission.kruntimes.io/v1/validate", review, format="json").json()[
        "response"
    ]
    grant_artifacts(team_b)
    allowed = client.post("/apis/admission.kruntimes.io/v1/validate", review, format="json").json()[
        "response"
    ]

    assert (refused["uid"], refused["allowed"], refused["status"]["code"]) == ("uid-7", False, 403)
    assert allowed == {"uid": "uid-7", "allowed": True}
