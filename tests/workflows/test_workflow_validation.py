"""Workflow admission: one test per rule of API.md and upstream's workflow_types.go (each fails
if its rule is removed), and every broken rule reported at once with its field path."""

from __future__ import annotations

import pytest

from tests.helpers.workflows import (
    build_deploy_jobs,
    causes_of,
    job,
    step,
    url,
    workflow_manifest,
)

pytestmark = pytest.mark.django_db


def post(api, manifest):
    return api.post(url("workflows"), manifest, format="json")


def refused(api, jobs=None, **spec) -> dict[str, str]:
    return causes_of(post(api, workflow_manifest(jobs=jobs, **spec)))


def test_the_seed_workflow_is_admitted(admin_api):
    response = post(admin_api, workflow_manifest(jobs=build_deploy_jobs()))
    assert response.status_code == 201, response.json()
    assert response.json()["spec"]["jobs"]["deploy"]["steps"][0]["artifacts"] == [
        {"from": "jobs.build.artifacts.dist.tgz", "path": "dist.tgz"}
    ]


# --- inputs and outputs -------------------------------------------------------------------


def test_input_type_is_only_string(admin_api):
    assert "spec.inputs.n.type" in refused(admin_api, inputs={"n": {"type": "number"}})


def test_input_type_defaults_to_string(admin_api):
    response = post(admin_api, workflow_manifest(inputs={"n": {"required": True}}))
    assert response.json()["spec"]["inputs"]["n"] == {"type": "string", "required": True}


def test_input_default_is_at_most_8192(admin_api):
    assert "spec.inputs.n.default" in refused(admin_api, inputs={"n": {"default": "x" * 8193}})


def test_at_most_64_inputs(admin_api):
    inputs = {f"i{n}": {} for n in range(65)}
    assert "spec.inputs" in refused(admin_api, inputs=inputs)


def test_at_most_64_outputs(admin_api):
    outputs = {f"o{n}": {"value": "x"} for n in range(65)}
    assert "spec.outputs" in refused(admin_api, outputs=outputs)


def test_an_output_has_a_value(admin_api):
    assert "spec.outputs.o.value" in refused(admin_api, outputs={"o": {}})


# --- jobs -----------------------------------------------------------------------------------


def test_at_least_one_job(admin_api):
    assert "spec.jobs" in refused(admin_api, jobs={})


def test_at_most_64_jobs(admin_api):
    assert "spec.jobs" in refused(admin_api, jobs={f"j{n}": job() for n in range(65)})


@pytest.mark.parametrize("name", ["a b", "-a", "x" * 64])
def test_job_names_are_label_values(admin_api, name):
    assert name in refused(admin_api, jobs={name: job()})["spec.jobs"]


def test_a_steps_job_needs_runs_on(admin_api):
    bare = job()
    del bare["runs-on"]
    assert "spec.jobs.build.runs-on" in refused(admin_api, jobs={"build": bare})


def test_runs_on_is_a_label_value(admin_api):
    assert "spec.jobs.build.runs-on" in refused(
        admin_api, jobs={"build": job(**{"runs-on": "a b"})}
    )


def test_at_most_64_needs(admin_api):
    jobs = {"build": job(needs=[f"j{n}" for n in range(65)])}
    assert "spec.jobs.build.needs" in refused(admin_api, jobs=jobs)


def test_a_job_has_steps_or_uses_not_both(admin_api):
    both = job(uses="other")
    assert "spec.jobs.build" in refused(admin_api, jobs={"build": both})
    neither = {"runs-on": "bash"}
    assert "spec.jobs.build" in refused(admin_api, jobs={"build": neither})


def test_a_reusable_call_is_admitted_with_with(admin_api):
    jobs = {"call": {"uses": "other-workflow", "with": {"who": "me"}}}
    assert post(admin_api, workflow_manifest(jobs=jobs)).status_code == 201


def test_job_uses_is_a_dns_subdomain(admin_api):
    assert "spec.jobs.call.uses" in refused(admin_api, jobs={"call": {"uses": "Other_Flow"}})


def test_job_with_needs_uses(admin_api):
    assert "spec.jobs.build.with" in refused(admin_api, jobs={"build": job(**{"with": {"a": "b"}})})


def test_job_with_is_at_most_256(admin_api):
    jobs = {"call": {"uses": "other", "with": {f"k{n}": "v" for n in range(257)}}}
    assert "spec.jobs.call.with" in refused(admin_api, jobs=jobs)


def test_job_outputs_are_at_most_64(admin_api):
    jobs = {"build": job(outputs={f"o{n}": "x" for n in range(65)})}
    assert "spec.jobs.build.outputs" in refused(admin_api, jobs=jobs)


def test_at_least_one_step(admin_api):
    assert "spec.jobs.build.steps" in refused(
        admin_api, jobs={"build": {"runs-on": "b", "steps": []}}
    )


def test_at_most_128_steps(admin_api):
    jobs = {"build": job(*[step(f"s{n}") for n in range(129)])}
    assert "spec.jobs.build.steps" in refused(admin_api, jobs=jobs)


# --- steps ----------------------------------------------------------------------------------


def steps_refused(api, *steps) -> dict[str, str]:
    return refused(api, jobs={"build": job(*steps)})


def test_a_step_has_a_name(admin_api):
    assert "spec.jobs.build.steps[0].name" in steps_refused(admin_api, {"run": "true"})


def test_step_names_are_label_values(admin_api):
    assert "spec.jobs.build.steps[0].name" in steps_refused(admin_api, step("no spaces"))


def test_step_names_are_unique_within_a_job(admin_api):
    found = steps_refused(admin_api, step("a"), step("a"))
    assert "Duplicate" in found["spec.jobs.build.steps[1].name"]


def test_the_same_step_name_in_two_jobs_is_fine(admin_api):
    jobs = {"a": job(step("x")), "b": job(step("x"))}
    assert post(admin_api, workflow_manifest(jobs=jobs)).status_code == 201


def test_a_step_has_run_or_uses_not_both(admin_api):
    assert "spec.jobs.build.steps[0]" in steps_refused(admin_api, step("a", uses="greet"))
    assert "spec.jobs.build.steps[0]" in steps_refused(admin_api, step("a", run=""))


def test_run_is_at_most_262144(admin_api):
    assert "spec.jobs.build.steps[0].run" in steps_refused(admin_api, step("a", "x" * 262145))


def test_step_uses_is_a_dns_subdomain(admin_api):
    assert "spec.jobs.build.steps[0].uses" in steps_refused(admin_api, step("a", "", uses="Greet!"))


def test_an_action_call_is_admitted_with_with(admin_api):
    response = post(
        admin_api,
        workflow_manifest(jobs={"b": job(step("a", "", uses="greet", **{"with": {"x": "y"}}))}),
    )
    assert response.status_code == 201, response.json()


def test_step_with_needs_uses(admin_api):
    assert "spec.jobs.build.steps[0].with" in steps_refused(
        admin_api, step("a", **{"with": {"x": "y"}})
    )


def test_step_with_is_at_most_256(admin_api):
    many = {f"k{n}": "v" for n in range(257)}
    assert "spec.jobs.build.steps[0].with" in steps_refused(
        admin_api, step("a", "", uses="greet", **{"with": many})
    )


@pytest.mark.parametrize("field, value", [("args", ["x"]), ("env", {"A": "b"})])
def test_args_and_env_only_on_run_steps(admin_api, field, value):
    found = steps_refused(admin_api, step("a", "", uses="greet", **{field: value}))
    assert f"spec.jobs.build.steps[0].{field}" in found


def test_at_most_256_args_of_at_most_8192(admin_api):
    assert "spec.jobs.build.steps[0].args" in steps_refused(admin_api, step(args=["a"] * 257))
    assert "spec.jobs.build.steps[0].args[1]" in steps_refused(
        admin_api, step(args=["a", "x" * 8193])
    )


def test_at_most_256_env(admin_api):
    env = {f"V{n}": "x" for n in range(257)}
    assert "spec.jobs.build.steps[0].env" in steps_refused(admin_api, step(env=env))


def test_env_names_are_what_a_run_takes(admin_api):
    assert "spec.jobs.build.steps[0].env" in steps_refused(admin_api, step(env={"A=B": "x"}))


# --- artifacts ------------------------------------------------------------------------------


def artifact_jobs(source: str = "jobs.build.artifacts.dist.tgz", path: str = "dist.tgz", **deploy):
    jobs = build_deploy_jobs()
    jobs["deploy"]["steps"][0]["artifacts"] = [{"from": source, "path": path}]
    jobs["deploy"].update(deploy)
    return jobs


@pytest.mark.parametrize(
    "source", ["build.dist.tgz", "jobs.build.outputs.x", "jobs.build.artifacts."]
)
def test_artifact_from_names_a_job_artifact(admin_api, source):
    found = refused(admin_api, jobs=artifact_jobs(source))
    assert "spec.jobs.deploy.steps[0].artifacts[0].from" in found


@pytest.mark.parametrize("path", ["/etc/passwd", "../up", "a/./b", "a//b"])
def test_artifact_path_is_relative_inside_the_run(admin_api, path):
    found = refused(admin_api, jobs=artifact_jobs(path=path))
    assert "spec.jobs.deploy.steps[0].artifacts[0].path" in found


def test_artifact_from_must_be_a_direct_needs_dependency(admin_api):
    jobs = artifact_jobs(needs=[])
    jobs["deploy"]["steps"][0]["run"] = "true"  # no jobs.build expression either
    found = refused(admin_api, jobs=jobs)
    assert list(found) == ["spec.jobs.deploy.steps[0].artifacts[0].from"]
    assert "not a job listed in needs" in found["spec.jobs.deploy.steps[0].artifacts[0].from"]


def test_an_artifact_of_a_transitive_dependency_is_refused(admin_api):
    jobs = artifact_jobs()
    jobs["release"] = job(
        step("ship", artifacts=[{"from": "jobs.build.artifacts.dist.tgz", "path": "d"}]),
        needs=["deploy"],
    )
    assert "spec.jobs.release.steps[0].artifacts[0].from" in refused(admin_api, jobs=jobs)


# --- needs and cycles -----------------------------------------------------------------------


def test_needs_name_another_job(admin_api):
    found = refused(admin_api, jobs={"build": job(needs=["nope"])})
    assert "nope" in found["spec.jobs.build.needs[0]"]


def test_a_job_cannot_need_itself(admin_api):
    found = refused(admin_api, jobs={"build": job(needs=["build"])})
    assert "itself" in found["spec.jobs.build.needs[0]"]


def test_a_dependency_cycle_is_named(admin_api):
    jobs = {"a": job(needs=["b"]), "b": job(needs=["a"])}
    assert refused(admin_api, jobs=jobs) == {
        "spec.jobs": "Invalid value: dependency cycle a -> b -> a"
    }


def test_a_longer_cycle_is_named_from_its_first_job(admin_api):
    jobs = {"a": job(needs=["c"]), "b": job(needs=["a"]), "c": job(needs=["b"]), "d": job()}
    assert refused(admin_api, jobs=jobs)["spec.jobs"].endswith("cycle a -> c -> b -> a")


def test_a_diamond_is_no_cycle(admin_api):
    jobs = {
        "a": job(),
        "b": job(needs=["a"]),
        "c": job(needs=["a"]),
        "d": job(needs=["b", "c"]),
    }
    assert post(admin_api, workflow_manifest(jobs=jobs)).status_code == 201


# --- expressions ----------------------------------------------------------------------------


def expression_refused(api, text: str, *, where: str = "run", **job_fields) -> dict[str, str]:
    first = step("first", 'echo "v=1" >> "$KRUNTIME_OUTPUTS"')
    if where == "run":
        second = step("second", text)
    elif where == "args":
        second = step("second", args=["ok", text])
    elif where == "env":
        second = step("second", env={"V": text})
    else:
        second = step("second", "", uses="greet", **{"with": {"v": text}})
    jobs = {"up": job(outputs={"o": "x"}), "build": job(first, second, **job_fields)}
    return refused(api, jobs=jobs, inputs={"who": {}})


@pytest.mark.parametrize(
    "where, path",
    [
        ("run", "run"),
        ("args", "args[1]"),
        ("env", "env[V]"),
        ("with", "with[v]"),
    ],
)
def test_step_expressions_are_checked_in_run_args_env_and_with(admin_api, where, path):
    found = expression_refused(admin_api, "${{ inputs.nope }}", where=where)
    assert "no such input" in found[f"spec.jobs.build.steps[1].{path}"]


def test_a_step_reads_declared_inputs_earlier_steps_and_needed_jobs(admin_api):
    text = "${{ inputs.who }} ${{ steps.first.outputs.v }} ${{ jobs.up.outputs.o }}"
    jobs = {
        "up": job(outputs={"o": "x"}),
        "build": job(step("first"), step("second", text), needs=["up"]),
    }
    manifest = workflow_manifest(jobs=jobs, inputs={"who": {}})
    response = post(admin_api, manifest)
    assert response.status_code == 201, response.json()


def test_a_step_cannot_read_a_later_step(admin_api):
    jobs = {"build": job(step("first", "${{ steps.second.outputs.v }}"), step("second"))}
    assert "spec.jobs.build.steps[0].run" in refused(admin_api, jobs=jobs)


def test_a_step_cannot_read_itself(admin_api):
    jobs = {"build": job(step("first", "${{ steps.first.outputs.v }}"))}
    assert "spec.jobs.build.steps[0].run" in refused(admin_api, jobs=jobs)


def test_a_step_cannot_read_a_job_outside_its_needs(admin_api):
    found = expression_refused(admin_api, "${{ jobs.up.outputs.o }}")
    assert "not a job listed in needs" in found["spec.jobs.build.steps[1].run"]


def test_a_step_cannot_use_an_unknown_expression(admin_api):
    found = expression_refused(admin_api, "${{ github.sha }}")
    assert "unsupported expression" in found["spec.jobs.build.steps[1].run"]


def test_job_outputs_read_the_steps_of_their_job(admin_api):
    jobs = {"build": job(step("first"), outputs={"v": "${{ steps.first.outputs.v }}"})}
    assert post(admin_api, workflow_manifest(jobs=jobs)).status_code == 201
    jobs = {"build": job(step("first"), outputs={"v": "${{ steps.other.outputs.v }}"})}
    assert "spec.jobs.build.outputs[v]" in refused(admin_api, jobs=jobs)


def test_job_outputs_cannot_read_other_jobs(admin_api):
    jobs = {"up": job(), "build": job(needs=["up"], outputs={"v": "${{ jobs.up.outputs.o }}"})}
    assert "spec.jobs.build.outputs[v]" in refused(admin_api, jobs=jobs)


def test_job_with_of_a_reusable_call_reads_needed_jobs(admin_api):
    jobs = {"up": job(), "call": {"uses": "other", "with": {"v": "${{ jobs.up.outputs.o }}"}}}
    assert "spec.jobs.call.with[v]" in refused(admin_api, jobs=jobs)
    jobs["call"]["needs"] = ["up"]
    assert post(admin_api, workflow_manifest(jobs=jobs)).status_code == 201


def test_workflow_outputs_read_any_job_and_inputs(admin_api):
    outputs = {"o": {"value": "${{ jobs.build.outputs.v }} ${{ inputs.who }}"}}
    manifest = workflow_manifest(inputs={"who": {}}, outputs=outputs)
    assert post(admin_api, manifest).status_code == 201


def test_workflow_outputs_cannot_read_steps_or_unknown_jobs(admin_api):
    outputs = {
        "a": {"value": "${{ steps.s.outputs.v }}"},
        "b": {"value": "${{ jobs.nope.outputs.v }}"},
        "c": {"value": "${{ inputs.nope }}"},
    }
    assert set(refused(admin_api, outputs=outputs)) == {
        "spec.outputs.a.value",
        "spec.outputs.b.value",
        "spec.outputs.c.value",
    }


def test_every_problem_is_reported_at_once(admin_api):
    jobs = {
        "a": job(step("x", "${{ inputs.nope }}"), needs=["b", "ghost"]),
        "b": job(step("x"), step("x"), needs=["a"]),
        "c d": job(),
    }
    assert set(refused(admin_api, jobs=jobs, inputs={"n": {"type": "int"}})) == {
        "spec.inputs.n.type",
        "spec.jobs",  # the bad job name and the cycle
        "spec.jobs.a.needs[1]",
        "spec.jobs.a.steps[0].run",
        "spec.jobs.b.steps[1].name",
    }
