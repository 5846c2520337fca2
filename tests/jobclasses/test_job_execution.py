"""A Job through the local adapter (seed 003's state machine, API.md's Job status): real
supervisor processes run the steps; the controller is run pass by pass as its tasks run it."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from jobclasses import job_controller, localexec
from jobclasses.models import Job, JobClass, JobPhase, LocalExecutionParameters
from portal.models import Event
from tests.helpers.jobclasses import (
    create,
    delete,
    job_manifest,
    local_class,
    patch,
    reason,
    reconcile_class,
    reconcile_job,
    set_namespace,
)

pytestmark = [pytest.mark.django_db, pytest.mark.processes]

TWO_STEPS = [
    {"name": "build", "run": "echo built > artifact.txt; echo building"},
    {"name": "test", "run": 'test "$(cat artifact.txt)" = built && echo tested'},
]


@pytest.fixture(autouse=True)
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    set_namespace("default")
    return tmp_path


def run_until(job, phases, timeout: float = 20.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        job = reconcile_job(job)
        if job is None or job.phase in phases:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"{job} stayed {job.phase}: {job.status}")
        time.sleep(0.1)


def submit(name="job", **spec) -> Job:
    return reconcile_job(create(job_manifest(name, **spec), namespace="default"))


def test_a_two_step_job_succeeds_with_both_exit_codes(data_dir):
    local_class("default", default=True)
    job = run_until(submit(steps=TWO_STEPS), {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert reason(job, "Succeeded") == ("True", "Completed")
    assert [(s["name"], s["status"], s["exitCode"]) for s in job.status["steps"]] == [
        ("build", "Succeeded", 0),
        ("test", "Succeeded", 0),
    ]
    assert job.status["startTime"] and job.status["completionTime"]
    assert job.status["executionRef"]["root"].startswith(str(data_dir))
    log = job_controller.log_of(job)
    assert log.index("building") < log.index("tested")


def test_a_failing_step_fails_the_job_with_its_exit_code():
    local_class("default", default=True)
    steps = [
        {"name": "ok", "run": "true"},
        {"name": "bad", "run": "exit 3"},
        {"name": "never", "run": "true"},
    ]
    job = run_until(submit(steps=steps), {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert reason(job, "Failed") == ("True", "StepFailed")
    assert [(s["name"], s["status"], s["exitCode"]) for s in job.status["steps"]] == [
        ("ok", "Succeeded", 0),
        ("bad", "Failed", 3),
        ("never", "Skipped", None),
    ]
    assert "bad" in job.status["message"]
    finished = Event.objects.get(involved_uid=str(job.uid), reason="Finished")
    assert (finished.type, finished.message) == ("Warning", "the Job failed (StepFailed)")
    assert Event.objects.get(involved_uid=str(job.uid), reason="Scheduled").type == "Normal"


def test_literal_env_and_inline_source_reach_the_steps():
    local_class("default", default=True)
    job = submit(
        steps=[
            {
                "name": "check",
                "run": 'test "$GREETING" = hi && test "$(cat src/file.txt)" = content',
            }
        ],
        env=[{"name": "GREETING", "value": "hi"}],
        source={"inline": {"src/file.txt": "content"}},
    )
    assert run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED}).phase == JobPhase.SUCCEEDED


def test_a_single_command_job_runs_as_one_step():
    local_class("default", default=True)
    job = submit(command=["sh", "-c"], args=["exit 0"])
    job = run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert [s["name"] for s in job.status["steps"]] == ["main"]
    assert job.phase == JobPhase.SUCCEEDED


def test_a_timeout_fails_the_job_deadline_exceeded():
    local_class("default", default=True)
    job = submit(steps=[{"name": "slow", "run": "sleep 30"}], timeoutSeconds=1)
    job = run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert reason(job, "Failed") == ("True", "DeadlineExceeded")


def test_cancel_while_running_fails_the_job_cancelled():
    local_class("default", default=True)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 30"}]), {JobPhase.RUNNING})
    patch(job, {"spec": {"cancelRequested": True}})
    job = run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert reason(job, "Failed") == ("True", "Cancelled")


def test_the_execution_ref_is_persisted_before_the_execution_is_created():
    local_class("default", default=True)
    job = create(job_manifest("job"), namespace="default")
    job = reconcile_job(job)
    ref = job.status["executionRef"]
    assert ref == {"type": "local", "root": ref["root"], "id": str(job.uid)}
    assert reason(job, "Scheduled") == ("True", "ExecutionCreated")


def test_a_controller_that_died_after_persisting_the_ref_creates_that_execution_once(data_dir):
    job_class = local_class("default", default=True)
    job = create(
        job_manifest("job", steps=[{"name": "slow", "run": "sleep 2"}]), namespace="default"
    )
    job = reconcile_job(job)  # accepted and scheduled
    # as if the controller had died between persisting the ref and creating the execution:
    root = Path(job.status["executionRef"]["root"])
    localexec.delete({"type": "local", "dir": str(root / str(job.uid)), "id": str(job.uid)})
    from jobclasses import status as job_status

    conditions = [c for c in job.status["conditions"] if c["type"] != "Scheduled"]
    assert job_status.write(job, {**job.status, "conditions": conditions})
    assert job_class.ready == "True"
    for _ in range(3):
        job = reconcile_job(job)
    assert localexec.running_count(root) == 1
    assert run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED}).phase == JobPhase.SUCCEEDED


def test_a_restarted_controller_observes_the_running_execution_instead_of_starting_another():
    local_class("default", default=True)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 1"}]), {JobPhase.RUNNING})
    root = Path(job.status["executionRef"]["root"])
    for _ in range(5):
        job = reconcile_job(job)
    assert localexec.running_count(root) == 1
    assert run_until(job, {JobPhase.SUCCEEDED}).phase == JobPhase.SUCCEEDED
    assert len(list(root.iterdir())) == 1


def test_a_lost_supervisor_is_result_unknown_and_never_rerun():
    local_class("default", default=True)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 30"}]), {JobPhase.RUNNING})
    execution = Path(job.status["executionRef"]["root"]) / str(job.uid)
    pid = json.loads((execution / "supervisor.json").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    job = run_until(job, {JobPhase.UNKNOWN})
    assert reason(job, "ResultUnknown") == ("True", "ExecutionLost")
    for _ in range(3):
        job = reconcile_job(job)
    assert job.phase == JobPhase.UNKNOWN
    assert localexec.running_count(execution.parent) == 0
    delete(job)  # the operator's way out: the execution's remains are removed with it
    assert reconcile_job(job) is None
    assert not execution.exists()


def test_max_concurrent_jobs_holds_new_jobs_waiting_for_capacity():
    local_class("default", default=True, params_spec={"maxConcurrentJobs": 1})
    first = run_until(submit("first", steps=[{"name": "s", "run": "sleep 1"}]), {JobPhase.RUNNING})
    second = submit("second")
    assert reason(second, "Scheduled") == ("False", "WaitingForCapacity")
    assert run_until(first, {JobPhase.SUCCEEDED}).phase == JobPhase.SUCCEEDED
    assert run_until(second, {JobPhase.SUCCEEDED}).phase == JobPhase.SUCCEEDED


def test_a_class_that_is_not_ready_blocks_new_executions_but_not_observe_cancel_or_delete(tmp_path):
    local_class("default", default=True)
    running = run_until(
        submit("running", steps=[{"name": "s", "run": "sleep 30"}]), {JobPhase.RUNNING}
    )
    finishing = run_until(
        submit("finishing", steps=[{"name": "s", "run": "sleep 1"}]), {JobPhase.RUNNING}
    )
    deleting = run_until(
        submit("deleting", steps=[{"name": "s", "run": "sleep 30"}]), {JobPhase.RUNNING}
    )
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    patch(
        LocalExecutionParameters.objects.get(name="local"),
        {"spec": {"workRoot": str(blocker / "x")}},
    )
    assert reason(reconcile_class("default"), "Ready") == ("False", "BackendUnreachable")
    waiting = submit("new")
    assert reason(waiting, "Accepted") == ("True", "Accepted")
    assert reason(waiting, "Scheduled") == ("False", "JobClassNotReady")
    # observe
    assert run_until(finishing, {JobPhase.SUCCEEDED}).phase == JobPhase.SUCCEEDED
    # cancel
    patch(running, {"spec": {"cancelRequested": True}})
    assert reason(run_until(running, {JobPhase.FAILED}), "Failed") == ("True", "Cancelled")
    # delete
    execution = Path(deleting.status["executionRef"]["root"]) / str(deleting.uid)
    delete(deleting)
    assert reconcile_job(deleting) is None
    assert not execution.exists()


def test_a_running_job_whose_class_vanished_is_still_observed_to_its_end():
    job_class = local_class("default", default=True)
    job = run_until(submit(steps=[{"name": "s", "run": "sleep 1"}]), {JobPhase.RUNNING})
    JobClass.objects.filter(pk=job_class.pk).delete()
    LocalExecutionParameters.objects.all().delete()
    assert run_until(job, {JobPhase.SUCCEEDED}).phase == JobPhase.SUCCEEDED


def test_a_parameter_edit_does_not_move_an_existing_execution(tmp_path):
    local_class("default", default=True)
    job = run_until(submit(steps=[{"name": "s", "run": "sleep 1"}]), {JobPhase.RUNNING})
    ref = job.status["executionRef"]
    patch(
        LocalExecutionParameters.objects.get(name="local"),
        {"spec": {"workRoot": str(tmp_path / "elsewhere")}},
    )
    reconcile_class("default")
    job = run_until(job, {JobPhase.SUCCEEDED})
    assert job.status["executionRef"] == ref
    assert not (tmp_path / "elsewhere" / str(job.uid)).exists()


def test_deleting_a_running_job_stops_its_execution():
    local_class("default", default=True)
    job = run_until(submit(steps=[{"name": "s", "run": "sleep 30"}]), {JobPhase.RUNNING})
    root = Path(job.status["executionRef"]["root"])
    delete(job)
    assert reconcile_job(job) is None
    assert localexec.running_count(root) == 0


def test_the_log_subresource_serves_the_jobs_one_log(admin_api, user_api):
    local_class("default", default=True)
    run_until(submit(steps=TWO_STEPS), {JobPhase.SUCCEEDED})
    path = "/apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/default/jobs/job/log"
    response = admin_api.get(path)
    assert response.status_code == 200
    text = response.content.decode()
    assert "building" in text and "tested" in text
    assert text.index("build") < text.index("test")
    tail = admin_api.get(path, {"limitBytes": 7}).content.decode()
    assert len(tail.encode()) <= 7 and text.endswith(tail)
    followed = b"".join(admin_api.get(path, {"follow": "true"}).streaming_content).decode()
    assert followed == text
    forbidden = user_api.get(path)
    assert forbidden.status_code == 403 and forbidden.json()["kind"] == "Status"
    missing = admin_api.get(path.replace("/job/", "/nope/"))
    assert missing.status_code == 404 and missing.json()["kind"] == "Status"
    bad = admin_api.get(path, {"limitBytes": "x"})
    assert bad.status_code == 400 and bad.json()["details"]["causes"][0]["field"] == "limitBytes"


def test_secret_and_config_map_values_reach_the_steps_and_nowhere_else():
    from tests.jobclasses.test_job_acceptance import make_config_map, make_secret

    make_secret(token="s3cr3t-value")
    make_config_map(mode="fast")
    local_class("default", default=True)
    job = submit(
        steps=[{"name": "use", "run": 'test "$TOKEN" = s3cr3t-value && test "$MODE" = fast'}],
        env=[
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        ],
    )
    job = run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert "s3cr3t-value" not in str(job.status) + job_controller.log_of(job)
    recorded = list(Event.objects.filter(involved_uid=str(job.uid)).values("reason", "message"))
    assert {e["reason"] for e in recorded} >= {"Scheduled", "Finished"}
    assert "s3cr3t-value" not in str(recorded)


def test_secret_values_a_step_prints_are_masked_in_the_log_and_the_execution_dir(data_dir):
    from tests.jobclasses.test_job_acceptance import make_config_map, make_secret

    make_secret(token="s3cr3t-value")
    make_config_map(mode="fast-mode")
    local_class("default", default=True)
    job = submit(
        steps=[
            {"name": "leak", "run": 'echo "TOKEN=$TOKEN MODE=$MODE"; printf %s "$TOKEN" >&2'},
            {"name": "again", "run": "printf 'x:%s' \"$TOKEN\" | base64"},
        ],
        env=[
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        ],
    )
    job = run_until(job, {JobPhase.SUCCEEDED, JobPhase.FAILED})
    assert job.phase == JobPhase.SUCCEEDED, job.status
    log = job_controller.log_of(job)
    assert "TOKEN=*** MODE=fast-mode\n***" in log  # a ConfigMap value is not masked
    assert log.count("***") == 3, log
    for path in data_dir.rglob("*"):  # spec.json too: the supervisor scrubbed it
        if path.is_file():
            assert b"s3cr3t-value" not in path.read_bytes(), path
