"""A name of another type than string (a step's ``name``, a job's ``uses``, a ``needs`` entry,
``workflowRef.name``, ...) in an Action, a Workflow or a WorkflowRun is a 422 naming the field,
never a 500 (a list or an object as a step name once reached a set and raised TypeError)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.api import assert_status
from tests.helpers.examples import examples
from tests.helpers.workflows import (
    action_manifest,
    job,
    step,
    url,
    workflow_manifest,
    workflow_run_manifest,
)

pytestmark = pytest.mark.django_db

NOT_STRINGS = [["a"], {"a": 1}, [], {}, 5, 1.5, True]
KINDS = {
    "actions": ("spec.steps[0].name", lambda s: action_manifest(steps=[s])),
    "workflows": ("spec.jobs.b.steps[0].name", lambda s: workflow_manifest(jobs={"b": job(s)})),
    "workflowruns": (
        "spec.jobs.b.steps[0].name",
        lambda s: workflow_run_manifest(jobs={"b": job(s)}),
    ),
}


def post(api, plural: str, manifest: dict):
    return api.post(f"{url(plural)}?dryRun=All", manifest, format="json")


@pytest.mark.parametrize("value", NOT_STRINGS, ids=repr)
@pytest.mark.parametrize("plural", sorted(KINDS))
def test_a_step_name_of_another_type_is_422_at_the_field(admin_api, plural, value):
    field, manifest = KINDS[plural]
    body = assert_status(post(admin_api, plural, manifest(step(name=value))), 422, "Invalid")
    causes = {c["field"]: c["reason"] for c in body["details"]["causes"]}
    assert causes.get(field) == "FieldValueTypeInvalid", causes


@pytest.mark.parametrize("plural", sorted(KINDS))
def test_an_unhashable_name_beside_a_valid_step_is_still_422(admin_api, plural):
    field, manifest = KINDS[plural]
    document = manifest(step(name=["x"]))
    steps = (
        document["spec"]["steps"] if plural == "actions" else document["spec"]["jobs"]["b"]["steps"]
    )
    steps.append(step(name="ok", run="echo ${{ steps.ok.outputs.x }}"))
    document["spec"]["outputs"] = {"o": {"value": "${{ steps.ok.outputs.x }}"}}
    body = assert_status(post(admin_api, plural, document), 422, "Invalid")
    assert field in {c["field"] for c in body["details"]["causes"]}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _set(document: dict, path: tuple, value) -> dict:
    changed = copy.deepcopy(document)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


def _call_workflow() -> dict:
    return workflow_manifest(jobs={"b": {"uses": "other", "with": {"x": "1"}}, "c": job()})


# (kind, the manifest, where the value goes): every name-like field of the three kinds
TARGETS = [
    ("actions", action_manifest, ("spec", "steps", 0, "name")),
    ("actions", action_manifest, ("spec", "steps", 0, "run")),
    ("actions", lambda: action_manifest(inputs={"a": {}}), ("spec", "inputs", "a", "type")),
    ("workflows", workflow_manifest, ("spec", "jobs", "build", "steps", 0, "name")),
    ("workflows", workflow_manifest, ("spec", "jobs", "build", "steps", 0, "uses")),
    ("workflows", workflow_manifest, ("spec", "jobs", "build", "runs-on")),
    ("workflows", workflow_manifest, ("spec", "jobs", "build", "needs")),
    ("workflows", _call_workflow, ("spec", "jobs", "b", "uses")),
    ("workflows", _call_workflow, ("spec", "jobs", "c", "needs")),
    ("workflowruns", workflow_run_manifest, ("spec", "jobs", "build", "steps", 0, "name")),
    ("workflowruns", workflow_run_manifest, ("spec", "workflowRef")),
    ("workflowruns", lambda: workflow_run_manifest(jobs={}), ("spec", "workflowRef", "name")),
]


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(target=st.sampled_from(TARGETS), value=json_values)
def test_any_json_value_in_a_name_field_is_never_a_server_error(admin_api, target, value):
    plural, manifest, path = target
    document = manifest()
    if path[:3] == ("spec", "workflowRef", "name"):
        del document["spec"]["jobs"]
        document["spec"]["workflowRef"] = {}
    response = post(admin_api, plural, _set(document, path, value))
    assert response.status_code < 500, response.json()
    assert response.json()["kind"] in ("Status", document["kind"])
