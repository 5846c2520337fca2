"""Script injection is visible: each ``${{ inputs.* }}``, ``${{ steps.* }}`` or ``${{ jobs.* }}``
inside a step's ``run`` (Workflows, inline WorkflowRuns, Actions) answers a ``Warning`` header
naming the field and the ``env:`` alternative; ``env:`` gives none; the admin shows the same.
Substitution stays textual (as in GitHub Actions)."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from portal.machinery.yaml import dump
from scheduling.models import Run
from tests.helpers.api import warnings_of
from tests.helpers.records import make_runtime
from tests.helpers.workflows import (
    action_manifest,
    create,
    job,
    started_run_manifest,
    step,
    url,
    workflow_manifest,
    workflow_run_manifest,
)
from workflows import controller
from workflows.injection import env_name
from workflows.models import Workflow, WorkflowRun

pytestmark = pytest.mark.django_db

WHO = {"who": {"type": "string", "default": "world"}}
HELLO = 'echo "hello ${{ inputs.who }}"'
WARNING = (
    "spec.jobs.a.steps[0].run: ${{ inputs.who }} is pasted into the script text, so a value "
    "holding shell syntax runs as code (script injection); "
    'use env: {WHO: "${{ inputs.who }}"} and "$WHO" in run'
)
SAFE_STEP = step("hi", 'echo "hello $WHO"', env={"WHO": "${{ inputs.who }}"})


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


def hello_workflow(name="greet", steps=None, **spec) -> dict:
    return workflow_manifest(name, {"a": job(*(steps or [step("hi", HELLO)]))}, inputs=WHO, **spec)


def test_an_input_in_run_answers_the_warning_with_the_field_and_env(admin_api):
    response = admin_api.post(url("workflows"), hello_workflow(), format="json")
    assert response.status_code == 201, response.json()
    assert response.headers["Warning"] == '299 - "' + WARNING.replace('"', '\\"') + '"'
    assert warnings_of(response) == [WARNING]


def test_one_warning_per_expression_each_at_its_field(admin_api):
    jobs = {
        "a": job(
            step("one", 'echo "${{ inputs.who }} and ${{inputs.who}}"'),
            step("two", "echo ${{ steps.one.outputs.tag }} ${{ inputs.who }}"),
            outputs={"tag": "${{ steps.one.outputs.tag }}"},
        ),
        "b": job(step("use", "deploy ${{ jobs.a.outputs.tag }}"), needs=["a"]),
    }
    response = admin_api.post(
        url("workflows"), workflow_manifest("many", jobs, inputs=WHO), format="json"
    )
    assert response.status_code == 201, response.json()
    shown = [text.split(" is pasted")[0] for text in warnings_of(response)]
    assert shown == [
        "spec.jobs.a.steps[0].run: ${{ inputs.who }}",
        "spec.jobs.a.steps[1].run: ${{ steps.one.outputs.tag }}",
        "spec.jobs.a.steps[1].run: ${{ inputs.who }}",
        "spec.jobs.b.steps[0].run: ${{ jobs.a.outputs.tag }}",
    ]
    assert (
        'use env: {ONE_TAG: "${{ steps.one.outputs.tag }}"} and "$ONE_TAG"'
        in (warnings_of(response)[1])
    )


def test_env_gives_no_warning(admin_api):
    steps = [SAFE_STEP, step("args", 'echo "$1"', args=["${{ inputs.who }}"])]
    response = admin_api.post(url("workflows"), hello_workflow(steps=steps), format="json")
    assert response.status_code == 201, response.json()
    assert "Warning" not in response.headers


def test_an_action_and_an_inline_workflow_run_warn_too(admin_api):
    action = action_manifest("say", [step("hi", HELLO)], inputs=WHO)
    response = admin_api.post(url("actions"), action, format="json")
    assert [t.split(":")[0] for t in warnings_of(response)] == ["spec.steps[0].run"]
    inline = workflow_run_manifest("inline", {"a": job(step("hi", HELLO))}, inputs={"who": "x"})
    response = admin_api.post(url("workflowruns"), inline, format="json")
    assert response.status_code == 201, response.json()
    assert warnings_of(response) == [WARNING]


def test_a_run_started_from_a_workflow_is_not_warned_again(admin_api):
    admin_api.post(url("workflows"), hello_workflow(), format="json")
    started = admin_api.post(url("workflowruns"), started_run_manifest("greet"), format="json")
    assert started.status_code == 201, started.json()
    assert "Warning" not in started.headers
    run = admin_api.post(f"{url('workflows', name='greet')}/run", {}, format="json")
    assert run.status_code == 201 and "Warning" not in run.headers


def test_an_update_warns_of_what_it_adds_and_a_cancel_of_nothing(admin_api):
    admin_api.post(url("workflows"), hello_workflow(), format="json")
    two = hello_workflow(steps=[step("hi", HELLO), step("bye", "echo bye ${{ inputs.who }}")])
    two["metadata"]["resourceVersion"] = str(Workflow.objects.get(name="greet").resource_version)
    response = admin_api.put(url("workflows", name="greet"), two, format="json")
    assert response.status_code == 200, response.json()
    assert [t.split(":")[0] for t in warnings_of(response)] == ["spec.jobs.a.steps[1].run"]
    inline = workflow_run_manifest("inline", {"a": job(step("hi", HELLO))}, inputs={"who": "x"})
    admin_api.post(url("workflowruns"), inline, format="json")
    cancel = admin_api.patch(
        url("workflowruns", name="inline"),
        json.dumps({"spec": {"cancelRequested": True}}),
        content_type="application/merge-patch+json",
    )
    assert cancel.status_code == 200, cancel.json()
    assert "Warning" not in cancel.headers


def test_substitution_stays_textual_as_in_github_actions():
    """The warning is all that changes: the value is pasted into the script as it is."""
    hostile = '"; touch pwned; echo "'
    wfr = create(workflow_run_manifest("w", {"a": job(step("hi", HELLO))}, inputs={"who": hostile}))
    controller.reconcile(WorkflowRun.objects.get(pk=wfr.pk), timezone.now())
    run = Run.objects.get(name="w-a-hi")
    assert run.spec["source"]["inline"] == 'echo "hello "; touch pwned; echo ""'


@pytest.mark.parametrize(
    ("ref", "name"),
    [
        ("inputs.who", "WHO"),
        ("inputs.dry-run", "DRY_RUN"),
        ("steps.build.outputs.image.tag", "BUILD_IMAGE_TAG"),
        ("jobs.1st.outputs.v", "_1ST_V"),
    ],
)
def test_the_variable_named_in_the_warning(ref, name):
    from workflows.expressions import parse_ref

    assert env_name(parse_ref(ref)) == name


def test_manage_py_apply_prints_the_warning_as_kubectl_does(tmp_path):
    import io

    from django.core.management import call_command

    path = tmp_path / "greet.yaml"
    path.write_text(dump(hello_workflow()))
    out, err = io.StringIO(), io.StringIO()
    call_command("apply", "-f", str(path), stdout=out, stderr=err)
    assert "workflow" in out.getvalue() and "greet created" in out.getvalue()
    assert err.getvalue().splitlines() == [f"Warning: {WARNING}"]
    err = io.StringIO()
    call_command("apply", "-f", str(path), stdout=io.StringIO(), stderr=err)
    assert err.getvalue() == ""  # unchanged: nothing written, nothing to warn of


# ------------------------------------------------------------------------------ the admin


@pytest.fixture
def console(client, admin_user):
    client.force_login(admin_user)
    return client


def test_the_admin_shows_the_warning_after_a_save_and_on_the_page(console):
    manifest = hello_workflow()
    manifest["metadata"]["namespace"] = "default"
    response = console.post(
        reverse("admin:workflows_workflow_add"), {"manifest": dump(manifest), "_save": "Save"}
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    shown = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    assert ("warning", WARNING) in shown
    workflow = Workflow.objects.get(name="greet")
    page = console.get(reverse("admin:workflows_workflow_change", args=[workflow.pk]))
    text = page.content.decode()
    assert "Admission warnings" in text
    assert "spec.jobs.a.steps[0].run: ${{ inputs.who }} is pasted into the script" in text


def test_the_admin_page_of_a_safe_workflow_has_no_warnings_section(console):
    workflow = create(hello_workflow(steps=[SAFE_STEP]))
    page = console.get(reverse("admin:workflows_workflow_change", args=[workflow.pk]))
    assert "Admission warnings" not in page.content.decode()


def test_the_example_workflow_passes_values_through_env():
    from pathlib import Path

    import yaml

    from workflows.injection import jobs_warnings

    path = Path(__file__).parents[2] / "examples" / "50-workflow-ci-data-sharing-demo.yaml"
    manifest = yaml.safe_load(path.read_text())
    assert jobs_warnings(manifest) == []
    deploy = manifest["spec"]["jobs"]["deploy"]["steps"][0]
    assert deploy["env"] == {"TESTS": "${{ jobs.build.outputs.tests }}"}
    assert "$TESTS" in deploy["run"]
