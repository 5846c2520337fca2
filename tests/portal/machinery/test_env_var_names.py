"""The one environment variable name rule (``portal.machinery.fields.env``) at every API that
takes env vars: Run ``spec.env``, a Workflow step's ``env`` and Job ``spec.env``.

Runs and Workflows take Kubernetes' rule (printable ASCII other than ``=``); a Job takes only
``portable`` names, because its values reach the pod as the keys of a Secret."""

from __future__ import annotations

import pytest

from portal.machinery.fields.env import NAME_MESSAGE, PORTABLE_NAME_MESSAGE, env_var_name_errors
from tests.helpers import jobclasses, workflows
from tests.helpers.runs import run_manifest, runs_url

pytestmark = pytest.mark.django_db

PORTABLE = ["PATH", "_private", "a.b-c", "X1"]
KUBERNETES_ONLY = ["1X", "MY VAR", "a:b", "~home", "{x}"]
NEVER = ["A=B", "=", "café", "new\nline", "tab\there"]


@pytest.mark.parametrize("name", PORTABLE + KUBERNETES_ONLY)
def test_kubernetes_rule_takes_printable_ascii_other_than_equals(name):
    assert env_var_name_errors(name) == []


@pytest.mark.parametrize("name", [*NEVER, ""])
def test_kubernetes_rule_refuses_equals_and_anything_not_printable_ascii(name):
    assert env_var_name_errors(name) == [NAME_MESSAGE]


@pytest.mark.parametrize("name", PORTABLE)
def test_portable_rule_takes_letters_digits_underscore_dash_dot(name):
    assert env_var_name_errors(name, portable=True) == []


@pytest.mark.parametrize("name", [*KUBERNETES_ONLY, *NEVER, ""])
def test_portable_rule_refuses_the_rest(name):
    assert env_var_name_errors(name, portable=True) == [PORTABLE_NAME_MESSAGE]


def post_run(api, name: str):
    manifest = run_manifest(env=[{"name": name, "value": "v"}])
    return api.post(runs_url(), manifest, format="json")


def post_workflow_step(api, name: str):
    jobs = {"build": workflows.job(workflows.step("s", env={name: "v"}))}
    manifest = workflows.workflow_manifest(jobs=jobs)
    return api.post(workflows.url("workflows"), manifest, format="json")


def post_job(api, name: str):
    manifest = jobclasses.job_manifest("j", env=[{"name": name, "value": "v"}])
    return api.post(jobclasses.url("jobs", "default"), manifest, format="json")


API = {
    # (post, the field a bad name is reported at, the rule's message)
    "run": (post_run, "spec.env[0].name", NAME_MESSAGE),
    "workflow": (post_workflow_step, "spec.jobs.build.steps[0].env", NAME_MESSAGE),
    "job": (post_job, "spec.env[0].name", PORTABLE_NAME_MESSAGE),
}
ACCEPTS = {"run": PORTABLE + KUBERNETES_ONLY, "workflow": PORTABLE + KUBERNETES_ONLY}
ACCEPTS["job"] = PORTABLE
REFUSES = {"run": NEVER, "workflow": NEVER, "job": KUBERNETES_ONLY + NEVER}


def cases(table: dict[str, list[str]]) -> list:
    return [pytest.param(api, name, id=f"{api}-{name!r}") for api in API for name in table[api]]


@pytest.mark.parametrize(("api", "name"), cases(ACCEPTS))
def test_every_env_api_accepts_the_names_its_rule_takes(admin_api, api, name):
    post = API[api][0]
    response = post(admin_api, name)
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(("api", "name"), cases(REFUSES))
def test_every_env_api_refuses_a_bad_name_with_a_field_error(admin_api, api, name):
    post, field, message = API[api]
    response = post(admin_api, name)
    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["kind"] == "Status" and body["reason"] == "Invalid"
    [cause] = [c for c in body["details"]["causes"] if c["field"] == field]
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"] == f'Invalid value: "{name}": {message}'
