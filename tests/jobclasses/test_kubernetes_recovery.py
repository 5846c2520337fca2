"""A control worker lost mid-Job (its driver killed, its data directory, an emptyDir, wiped):
the Job goes on from its record in the cluster (the batch Job's annotation, the pod's step
state), with no step run twice and no second batch Job; only a batch Job gone from the
cluster ends ``ExecutionLost``. Real driver processes against the emulator, through the
official client."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from jobclasses import job_controller, kubeexec
from jobclasses.adapters.kubernetes import outputs_of
from jobclasses.models import Job, JobPhase
from tests.helpers.jobclasses import kubernetes_class, reason, reconcile_job, set_namespace
from tests.helpers.waiting import wait_until
from tests.jobclasses.kube_support import (
    add_runtime_class,
    add_service_account,
    batch,
    batch_jobs,
    job_creations,
    run_until,
    submit,
)

pytestmark = [pytest.mark.django_db, pytest.mark.processes]

FINAL = {JobPhase.SUCCEEDED, JobPhase.FAILED}


@pytest.fixture(autouse=True)
def cluster(pods):
    add_runtime_class(pods, "gvisor")
    add_service_account(pods, "default", "ayatori-job")
    kubernetes_class(
        "rootless",
        default=True,
        params_spec={"serviceAccountName": "ayatori-job", "runtimeClassName": "gvisor"},
    )
    set_namespace("default")
    return pods


def execution_dir(job: Job) -> Path:
    ref = job.status["executionRef"]
    return Path(ref["root"]) / ref["id"]


def runs(tmp_path: Path, step: str) -> int:
    marks = tmp_path / f"ran-{step}"
    return len(marks.read_text().splitlines()) if marks.exists() else 0


def three_steps(tmp_path: Path, second_exit: int) -> list[dict]:
    """The second step waits for ``go``, so the worker can be lost while it runs."""
    return [
        {"name": "first", "run": f"echo x >> {tmp_path}/ran-first; echo one > /outputs/one.txt"},
        {
            "name": "second",
            "run": f"echo x >> {tmp_path}/ran-second; echo waiting;"
            f" while [ ! -e {tmp_path}/go ]; do sleep 0.05; done;"
            f" echo two > /outputs/two.txt; echo second done; exit {second_exit}",
        },
        {"name": "third", "run": f"echo x >> {tmp_path}/ran-third"},
    ]


def second_step_running(job: Job, tmp_path: Path) -> Job:
    def running() -> bool:
        nonlocal job
        job = reconcile_job(job)
        steps = job.status.get("steps") or []
        return len(steps) == 3 and steps[1]["status"] == "Running" and runs(tmp_path, "second")

    assert wait_until(running, timeout=20, interval=0.1), job.status
    return job


def lose_the_control_worker(job: Job, *, wipe: bool = True) -> None:
    """What a rescheduled control worker does to a Job: its driver dies, its dir goes."""
    directory = execution_dir(job)
    pid = json.loads((directory / "supervisor.json").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    from tests.helpers.localexec import pid_alive

    assert wait_until(lambda: not pid_alive(pid), timeout=10, interval=0.05)
    if wipe:
        shutil.rmtree(directory)


@pytest.mark.parametrize("wipe", [True, False], ids=["dir-wiped", "dir-kept"])
def test_a_job_whose_control_worker_is_lost_mid_step_ends_succeeded_from_the_cluster(
    pods, tmp_path, wipe
):
    job = second_step_running(submit(steps=three_steps(tmp_path, 0)), tmp_path)
    lose_the_control_worker(job, wipe=wipe)
    (tmp_path / "go").touch()
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, (job.status, job_controller.log_of(job))
    assert [(s["name"], s["status"], s["exitCode"]) for s in job.status["steps"]] == [
        ("first", "Succeeded", 0),
        ("second", "Succeeded", 0),
        ("third", "Succeeded", 0),
    ]
    assert [runs(tmp_path, s) for s in ("first", "second", "third")] == [1, 1, 1]
    assert job_creations(pods) == 1
    outputs = outputs_of(job.status["executionRef"])
    assert (outputs / "one.txt").read_text() == "one\n"  # written before the loss
    assert (outputs / "two.txt").read_text() == "two\n"
    log = job_controller.log_of(job)
    assert "step second (started earlier: following it)" in log
    assert "waiting" in log and "second done" in log  # the step's whole log, from the pod
    assert batch_jobs(pods) == [] and pods.pods("default") == []  # deleted once observed


def test_a_step_that_fails_after_its_control_worker_was_lost_fails_the_job(pods, tmp_path):
    job = second_step_running(submit(steps=three_steps(tmp_path, 3)), tmp_path)
    lose_the_control_worker(job)
    (tmp_path / "go").touch()
    job = run_until(job, FINAL)
    assert reason(job, "Failed") == ("True", "StepFailed")
    assert [(s["status"], s["exitCode"]) for s in job.status["steps"]] == [
        ("Succeeded", 0),
        ("Failed", 3),
        ("Skipped", None),
    ]
    assert [runs(tmp_path, s) for s in ("first", "second", "third")] == [1, 1, 0]
    assert job_creations(pods) == 1
    assert (outputs_of(job.status["executionRef"]) / "two.txt").exists()


def test_the_batch_job_carries_the_record_the_recovery_reads(pods, tmp_path):
    job = second_step_running(submit(steps=three_steps(tmp_path, 0)), tmp_path)
    (found,) = batch_jobs(pods)
    recorded = kubeexec.record.of(found)
    assert recorded is not None and recorded["prepared"] is True
    assert [(s["name"], s["status"]) for s in recorded["steps"]] == [
        ("first", "Succeeded"),
        ("second", "Running"),
        ("third", "Pending"),
    ]
    (tmp_path / "go").touch()
    assert run_until(job, FINAL).phase == JobPhase.SUCCEEDED


def test_a_batch_job_deleted_while_its_control_worker_was_away_is_execution_lost(pods, tmp_path):
    job = second_step_running(submit(steps=three_steps(tmp_path, 0)), tmp_path)
    lose_the_control_worker(job)
    (found,) = batch_jobs(pods)
    batch(pods).delete_namespaced_job(
        found["metadata"]["name"], "default", propagation_policy="Background", _request_timeout=5
    )
    job = run_until(job, {JobPhase.UNKNOWN})
    assert reason(job, "ResultUnknown") == ("True", "ExecutionLost")
    assert "gone from the cluster" in job.status["message"]
    for _ in range(3):
        job = reconcile_job(job)
    assert job.phase == JobPhase.UNKNOWN
    assert job_creations(pods) == 1 and batch_jobs(pods) == []
    assert [runs(tmp_path, s) for s in ("first", "second", "third")] == [1, 1, 0]


def test_a_resumed_driver_masks_the_secret_values_it_reads_again_from_the_pod(pods, tmp_path):
    from tests.jobclasses.test_job_acceptance import make_secret

    make_secret(token="s3cr3t-value")
    steps = three_steps(tmp_path, 0)
    steps[1]["run"] = 'echo "token $TOKEN"; ' + steps[1]["run"]
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}]
    job = second_step_running(submit(steps=steps, env=env), tmp_path)
    lose_the_control_worker(job, wipe=True)
    (tmp_path / "go").touch()
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, (job.status, job_controller.log_of(job))
    log = job_controller.log_of(job)
    assert "step second (started earlier: following it)" in log
    assert "token ***\n" in log and "s3cr3t-value" not in log
