"""Action admission: run steps only, at least one, input type string only, expressions."""

from __future__ import annotations

import pytest

from tests.helpers.workflows import action_manifest, causes_of, step, url

pytestmark = pytest.mark.django_db


def post(api, manifest):
    return api.post(url("actions"), manifest, format="json")


def test_an_action_is_admitted(admin_api):
    manifest = action_manifest(
        steps=[step("a", "echo ${{ inputs.who }}"), step("b", "echo ${{ steps.a.outputs.v }}")],
        inputs={"who": {"default": "me"}},
        outputs={"v": {"value": "${{ steps.b.outputs.v }}"}},
    )
    response = post(admin_api, manifest)
    assert response.status_code == 201, response.json()


def test_at_least_one_step(admin_api):
    assert "spec.steps" in causes_of(post(admin_api, action_manifest(steps=[])))


def test_at_most_128_steps(admin_api):
    steps = [step(f"s{n}") for n in range(129)]
    assert "spec.steps" in causes_of(post(admin_api, action_manifest(steps=steps)))


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"uses": "other"}, "uses"),
        ({"with": {"a": "b"}}, "with"),
        ({"artifacts": [{"from": "jobs.a.artifacts.b", "path": "b"}]}, "artifacts"),
    ],
)
def test_every_step_is_a_run_step(admin_api, bad, field):
    found = causes_of(post(admin_api, action_manifest(steps=[step("a", **bad)])))
    assert f"spec.steps[0].{field}" in found


def test_a_step_without_run_is_refused(admin_api):
    assert "spec.steps[0]" in causes_of(post(admin_api, action_manifest(steps=[{"name": "a"}])))


def test_input_type_is_only_string(admin_api):
    manifest = action_manifest(inputs={"n": {"type": "boolean"}})
    assert "spec.inputs.n.type" in causes_of(post(admin_api, manifest))


def test_step_names_are_unique(admin_api):
    found = causes_of(post(admin_api, action_manifest(steps=[step("a"), step("a")])))
    assert "spec.steps[1].name" in found


def test_expressions_read_inputs_and_earlier_steps_only(admin_api):
    steps = [
        step("a", "${{ steps.b.outputs.v }}"),
        step("b", "${{ inputs.nope }}"),
        step("c", "${{ jobs.x.outputs.v }}"),
    ]
    found = causes_of(post(admin_api, action_manifest(steps=steps)))
    assert set(found) == {"spec.steps[0].run", "spec.steps[1].run", "spec.steps[2].run"}


def test_outputs_read_its_steps(admin_api):
    manifest = action_manifest(outputs={"v": {"value": "${{ steps.nope.outputs.v }}"}})
    assert "spec.outputs.v.value" in causes_of(post(admin_api, manifest))
