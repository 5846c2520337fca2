"""``manage.py run-workflow``: creates the WorkflowRun as ``--as`` (or the local operator);
with ``--wait`` prints the job/step table whenever it changes, then ``WorkflowRun <name>
<phase>``, exiting 0 only for Succeeded, 1 otherwise, 2 on timeout.

The controller is not here: each poll's sleep writes the next status into the row."""

from __future__ import annotations

import pytest

from tests.helpers.commands import run
from tests.helpers.workflows import build_deploy_jobs, create, workflow_manifest
from workflows import waiting
from workflows.models import WorkflowRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def workflow():
    return create(
        workflow_manifest("ci", jobs=build_deploy_jobs(), inputs={"who": {"default": "x"}})
    )


@pytest.fixture
def statuses(monkeypatch):
    """Statuses the fake controller writes, one per poll; then time passes without change."""
    queue: list[dict] = []
    clock = [0.0]

    def sleep(seconds):
        clock[0] += seconds
        if queue:
            status = queue.pop(0)
            WorkflowRun.objects.filter(name="r").update(
                status=status, phase=status.get("phase", "Pending")
            )

    monkeypatch.setattr(waiting, "sleep", sleep)
    monkeypatch.setattr(waiting, "monotonic", lambda: clock[0])
    return queue


RUNNING = {
    "phase": "Running",
    "jobs": {
        "build": {
            "phase": "Running",
            "steps": [{"name": "test", "phase": "Running", "runName": "r-build-test"}],
        },
        "deploy": {"phase": "Pending"},
    },
}


def finished(phase: str) -> dict:
    return {
        "phase": phase,
        "jobs": {
            "build": {
                "phase": "Succeeded",
                "steps": [
                    {"name": "test", "phase": "Succeeded", "runName": "r-build-test"},
                    {"name": "package", "phase": "Succeeded", "runName": "r-build-package"},
                ],
            },
            "deploy": {
                "phase": "Succeeded" if phase == "Succeeded" else "Failed",
                "steps": [{"name": "verify", "phase": "Failed", "runName": "r-deploy-verify"}],
            },
        },
    }


def test_without_wait_it_creates_and_exits(workflow):
    result = run("run-workflow", "ci", "--input", "who=me", "--name", "r")
    assert result.code == 0, result.err
    assert result.out.strip() == "workflowrun.kruntimes.io/r created"
    assert WorkflowRun.objects.get(name="r").spec["inputs"] == {"who": "me"}


def test_a_generated_name(workflow):
    result = run("run-workflow", "ci")
    assert result.code == 0, result.err
    assert WorkflowRun.objects.get().name.startswith("ci-")


def test_wait_prints_the_table_on_each_change_and_exits_0_on_success(workflow, statuses):
    statuses += [RUNNING, RUNNING, finished("Succeeded")]
    result = run("run-workflow", "ci", "--name", "r", "--wait")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "workflowrun.kruntimes.io/r created"
    assert lines[-1] == "WorkflowRun r Succeeded"
    assert lines[-2].startswith("finished in ") and lines[-2].endswith("s")
    tables = [line for line in lines if line.startswith("JOB")]
    assert len(tables) == 3  # Pending, Running (shown once), Succeeded
    assert lines[1].split() == ["JOB", "STEP", "PHASE", "RUN", "OUTPUTS", "REASON"]
    assert lines[2].split() == ["build", "-", "Pending", "-", "-", "-"]
    assert lines[3].split() == ["build", "test", "Pending", "-", "-", "-"]
    split = [line.split() for line in lines]
    assert ["build", "test", "Running", "r-build-test", "-", "-"] in split
    assert ["deploy", "verify", "Failed", "r-deploy-verify", "-", "-"] in split


def test_a_step_its_ended_job_never_started_shows_skipped_with_why():
    from workflows.waiting import table

    status = {
        "phase": "Failed",
        "jobs": {
            "build": {
                "phase": "Failed",
                "message": "step test: Run r-build-test Failed (Error)",
                "steps": [{"name": "test", "phase": "Failed", "runName": "r-build-test"}],
            },
            "deploy": {"phase": "Skipped", "message": "needs build, which did not succeed"},
        },
    }
    run = WorkflowRun(name="r", spec={"jobs": build_deploy_jobs()}, status=status)
    rows = [line.split(None, 5) for line in table(run).splitlines()]
    assert rows[1] == [
        "build",
        "-",
        "Failed",
        "-",
        "-",
        "step test: Run r-build-test Failed (Error)",
    ]
    assert rows[3] == ["build", "package", "Skipped", "-", "-", "an earlier step failed"]
    assert rows[4] == ["deploy", "-", "Skipped", "-", "-", "needs build, which did not succeed"]
    assert rows[5] == [
        "deploy",
        "verify",
        "Skipped",
        "-",
        "-",
        "needs build, which did not succeed",
    ]


def test_the_table_shows_step_outputs_as_key_colon_value():
    from workflows.waiting import outputs_text

    assert outputs_text({"tests": "passed", "a": "x" * 50}) == "a: " + "x" * 40 + ", tests: passed"
    assert outputs_text({}) == "-" and outputs_text(None) == "-"


@pytest.mark.parametrize("phase", ["Failed", "Cancelled"])
def test_wait_exits_1_when_it_did_not_succeed(workflow, statuses, phase):
    statuses += [finished(phase)]
    result = run("run-workflow", "ci", "--name", "r", "--wait")
    assert result.code == 1
    assert result.out.splitlines()[-1] == f"WorkflowRun r {phase}"


def test_wait_exits_2_on_timeout(workflow, statuses):
    statuses += [RUNNING]
    result = run("run-workflow", "ci", "--name", "r", "--wait", "--timeout", "3")
    assert result.code == 2
    assert result.out.splitlines()[-1] == "WorkflowRun r Running"
    assert "timed out" in result.err


def test_a_missing_workflow_is_reported(db):
    result = run("run-workflow", "nope")
    assert result.code == 1
    assert "NotFound" in result.err and "nope" in result.err


def test_a_refused_input_is_reported(workflow):
    result = run("run-workflow", "ci", "--input", "typo=x")
    assert result.code == 1
    assert "spec.inputs.typo" in result.err
    assert not WorkflowRun.objects.exists()


def test_a_malformed_input_is_a_client_error(workflow):
    result = run("run-workflow", "ci", "--input", "novalue")
    assert result.code == 1
    assert result.err.startswith("error: --input")


def test_as_a_user_without_create_it_is_forbidden(workflow):
    result = run("run-workflow", "ci", "--as", "alice")
    assert result.code == 1
    assert "Forbidden" in result.err
    assert not WorkflowRun.objects.exists()
