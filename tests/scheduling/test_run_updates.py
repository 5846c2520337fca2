"""Run updates: execution inputs are immutable (PUT and merge PATCH alike), cancelRequested is
one-way, ttlSecondsAfterFinished stays mutable, the priority annotation stays an integer."""

from __future__ import annotations

import copy

import pytest

from portal.machinery.manifest import merge_patch as apply_merge
from scheduling.models import Run
from tests.helpers.runs import artifact_ref, causes, merge_patch, run_manifest, runs_url, term
from tests.helpers.workspaces import make_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def workspace():
    """A Run may reference only a workspace that exists (workspaces/review.py)."""
    make_workspace("ci-build-workspace")


INV = "FieldValueInvalid"
URL = f"{runs_url()}/r"
FULL_SPEC = {
    "runtime": "bash",
    "source": {"repoURL": "https://git.example.com/app.git", "commitSHA": "abc123"},
    "mode": {"task": {"entrypoint": "ci/build.sh", "args": ["--fast"]}},
    "workspace": {"name": "ci-build-workspace"},
    "affinity": {"runAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term()]}},
    "resources": {"requests": {"runs": 1, "gpu": 1}},
    "env": [{"name": "A", "value": "1"}],
    "timeout": "5m",
    "retryPolicy": {"maxAttempts": 2, "backoff": "1s"},
    "ttlSecondsAfterFinished": 60,
    "artifactInputs": [{"ref": artifact_ref(), "path": "inputs/report.txt"}],
}
MINIMAL_SPEC = {
    "runtime": "bash",
    "source": {"inline": "echo"},
    "mode": {"task": {"entrypoint": "ci/build.sh"}},
}


def _create(admin_api, spec: dict) -> dict:
    response = admin_api.post(runs_url(), run_manifest(**copy.deepcopy(spec)), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _write(admin_api, method: str, spec_patch: dict):
    if method == "patch":
        return merge_patch(admin_api, URL, {"spec": spec_patch})
    live = admin_api.get(URL).json()
    live["spec"] = apply_merge(live["spec"], spec_patch)
    return admin_api.put(URL, live, format="json")


def _assert_rejected_unchanged(admin_api, response, field: str, before: dict) -> None:
    assert causes(response) == {field: INV}
    assert response.json()["details"]["causes"][0]["message"] == "field is immutable"
    assert admin_api.get(URL).json() == before


CHANGES = [
    pytest.param("spec.runtime", {"runtime": "python"}, id="runtime"),
    pytest.param("spec.source", {"source": {"commitSHA": "def456"}}, id="source-changed"),
    pytest.param("spec.mode", {"mode": {"task": {"args": ["--slow"]}}}, id="mode-args"),
    pytest.param(
        "spec.mode", {"mode": {"task": None, "function": {"handler": "m.f"}}}, id="mode-kind"
    ),
    pytest.param("spec.env", {"env": [{"name": "A", "value": "2"}]}, id="env-changed"),
    pytest.param("spec.env", {"env": None}, id="env-removed"),
    pytest.param("spec.timeout", {"timeout": "10m"}, id="timeout-changed"),
    pytest.param("spec.timeout", {"timeout": None}, id="timeout-removed"),
    pytest.param("spec.retryPolicy", {"retryPolicy": {"maxAttempts": 3}}, id="retry-changed"),
    pytest.param("spec.retryPolicy", {"retryPolicy": None}, id="retry-removed"),
    pytest.param(
        "spec.resources", {"resources": {"requests": {"runs": 2}}}, id="resources-changed"
    ),
    pytest.param("spec.workspace", {"workspace": {"name": "other"}}, id="workspace-changed"),
    pytest.param("spec.workspace", {"workspace": None}, id="workspace-removed"),
    pytest.param(
        "spec.affinity",
        {
            "affinity": {
                "runAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term(job="x")]
                }
            }
        },
        id="affinity-changed",
    ),
    pytest.param("spec.affinity", {"affinity": None}, id="affinity-removed"),
    pytest.param(
        "spec.artifactInputs",
        {"artifactInputs": [{"ref": artifact_ref(), "path": "inputs/other.txt"}]},
        id="inputs-changed",
    ),
    pytest.param("spec.artifactInputs", {"artifactInputs": None}, id="inputs-removed"),
]
ADDITIONS = [
    pytest.param(
        "spec.source",
        {"source": {"inline": None, "repoURL": "https://g/r.git"}},
        id="source-replaced",
    ),
    pytest.param("spec.env", {"env": [{"name": "A"}]}, id="env"),
    pytest.param("spec.timeout", {"timeout": "1m"}, id="timeout"),
    pytest.param("spec.retryPolicy", {"retryPolicy": {"maxAttempts": 2}}, id="retryPolicy"),
    pytest.param("spec.workspace", {"workspace": {"name": "ws"}}, id="workspace"),
    pytest.param(
        "spec.affinity",
        {
            "affinity": {
                "runAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "runAffinityTerm": term()}
                    ]
                }
            }
        },
        id="affinity",
    ),
    pytest.param(
        "spec.artifactInputs",
        {"artifactInputs": [{"ref": artifact_ref(), "path": "in"}]},
        id="artifactInputs",
    ),
]


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(("field", "spec_patch"), CHANGES)
def test_changing_an_execution_input_is_rejected(admin_api, method, field, spec_patch):
    before = _create(admin_api, FULL_SPEC)
    response = _write(admin_api, method, spec_patch)
    _assert_rejected_unchanged(admin_api, response, field, before)


@pytest.mark.parametrize("method", ["put", "patch"])
def test_removing_the_source_of_a_task_run_is_rejected_as_immutable(admin_api, method):
    """A Run may come without source, but one that has it keeps it."""
    before = _create(admin_api, FULL_SPEC)
    response = _write(admin_api, method, {"source": None})
    assert causes(response) == {"spec.source": "FieldValueInvalid"}
    # only the immutability rule: a Run without source is valid on its own
    assert [(c["field"], c["message"]) for c in response.json()["details"]["causes"]] == [
        ("spec.source", "field is immutable"),
    ]
    assert admin_api.get(URL).json() == before


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(("field", "spec_patch"), ADDITIONS)
def test_adding_an_execution_input_after_create_is_rejected(admin_api, method, field, spec_patch):
    before = _create(admin_api, MINIMAL_SPEC)
    response = _write(admin_api, method, spec_patch)
    _assert_rejected_unchanged(admin_api, response, field, before)


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(
    "spec_patch",
    [
        pytest.param({}, id="same-object"),
        pytest.param(
            {"workspace": {"kind": "PersistentWorkspace", "apiGroup": "kruntimes.io/v1alpha1"}},
            id="explicit-defaults",
        ),
        pytest.param({"resources": None}, id="resources-redefaulted-equal"),
    ],
)
def test_rewriting_the_same_inputs_is_accepted(admin_api, method, spec_patch):
    spec = {**FULL_SPEC, "resources": {"requests": {"runs": 1}}}
    before = _create(admin_api, spec)
    response = _write(admin_api, method, spec_patch)
    assert response.status_code == 200, response.json()
    assert response.json()["spec"] == before["spec"]
    assert response.json()["metadata"]["generation"] == 1


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(
    ("spec_patch", "stored"),
    [
        pytest.param({"ttlSecondsAfterFinished": 3600}, 3600, id="changed"),
        pytest.param({"ttlSecondsAfterFinished": 0}, 0, id="zero"),
        pytest.param({"ttlSecondsAfterFinished": None}, None, id="removed"),
    ],
)
def test_ttl_seconds_after_finished_stays_mutable(admin_api, method, spec_patch, stored):
    _create(admin_api, FULL_SPEC)
    response = _write(admin_api, method, spec_patch)
    assert response.status_code == 200, response.json()
    assert response.json()["spec"].get("ttlSecondsAfterFinished") == stored
    assert response.json()["metadata"]["generation"] == 2


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(
    ("initial", "spec_patch"),
    [
        pytest.param(None, {"cancelRequested": True}, id="absent-to-true"),
        pytest.param(False, {"cancelRequested": True}, id="false-to-true"),
        pytest.param(True, {"cancelRequested": True}, id="true-stays-true"),
        pytest.param(True, {"ttlSecondsAfterFinished": 5}, id="true-kept-by-other-change"),
        pytest.param(False, {"cancelRequested": None}, id="false-removed"),
    ],
)
def test_cancel_requested_transitions_accepted(admin_api, method, initial, spec_patch):
    spec = MINIMAL_SPEC if initial is None else {**MINIMAL_SPEC, "cancelRequested": initial}
    _create(admin_api, spec)
    response = _write(admin_api, method, spec_patch)
    assert response.status_code == 200, response.json()
    expected = spec_patch.get("cancelRequested", initial)
    assert response.json()["spec"].get("cancelRequested") == expected
    assert Run.objects.get(name="r").cancel_requested is bool(expected)


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(
    "spec_patch",
    [
        pytest.param({"cancelRequested": False}, id="true-to-false"),
        pytest.param({"cancelRequested": None}, id="true-removed"),
    ],
)
def test_cancel_requested_cannot_be_reset_or_removed(admin_api, method, spec_patch):
    before = _create(admin_api, {**MINIMAL_SPEC, "cancelRequested": True})
    response = _write(admin_api, method, spec_patch)
    assert causes(response) == {"spec.cancelRequested": INV}
    assert admin_api.get(URL).json() == before
    assert Run.objects.get(name="r").cancel_requested is True


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        pytest.param("7", True, id="integer"),
        pytest.param("soon", False, id="word"),
        pytest.param(None, True, id="removed"),
    ],
)
def test_priority_annotation_checked_on_update(admin_api, value, ok):
    _create(admin_api, {**MINIMAL_SPEC})
    merge_patch(
        admin_api, URL, {"metadata": {"annotations": {"scheduling.kruntimes.io/priority": "3"}}}
    )
    response = merge_patch(
        admin_api, URL, {"metadata": {"annotations": {"scheduling.kruntimes.io/priority": value}}}
    )
    if ok:
        assert response.status_code == 200, response.json()
        assert Run.objects.get(name="r").priority == int(value or 0)
    else:
        assert causes(response) == {"metadata.annotations[scheduling.kruntimes.io/priority]": INV}
        assert Run.objects.get(name="r").priority == 3
