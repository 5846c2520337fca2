"""Jobs on a Kubernetes JobClass, end to end (seed 004 "What the proof must show", item by
item; timeout, cancel, leftovers, crash safety): the portal's controller drives a real
detached driver process that talks to the emulator over HTTP through the official client,
pods included (``tests.helpers.kube_pods``: exec runs the command in a per-pod directory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobclasses import job_controller, kubeexec
from jobclasses.adapters.kubernetes import outputs_of
from jobclasses.models import Job, JobPhase
from tests.helpers.jobclasses import (
    kubernetes_class,
    patch,
    reason,
    reconcile_job,
    set_namespace,
)
from tests.helpers.waiting import wait_until
from tests.jobclasses.kube_support import (
    IMAGE,
    add_runtime_class,
    add_service_account,
    batch_jobs,
    job_creations,
    run_until,
    submit,
)

pytestmark = [pytest.mark.django_db, pytest.mark.processes]

JOBS_URL = "/apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/default/jobs"
PARAMETERS = {"serviceAccountName": "ayatori-job", "runtimeClassName": "gvisor"}
INSTALL = (
    "mkdir -p /work/bin && printf '#!/bin/sh\\necho tool says hi\\n' > /work/bin/tool"
    " && chmod +x /work/bin/tool && echo installed"
)
USE = (
    "/work/bin/tool && cat /work/src/greeting.txt && ls /steps && echo report > /outputs/report.txt"
)
TWO_STEPS = [{"name": "install", "run": INSTALL}, {"name": "use", "run": USE}]
FINAL = {JobPhase.SUCCEEDED, JobPhase.FAILED}


@pytest.fixture(autouse=True)
def cluster(pods):
    add_runtime_class(pods, "gvisor")
    add_service_account(pods, "default", "ayatori-job")
    kubernetes_class("rootless", default=True, params_spec=PARAMETERS)
    set_namespace("default")
    return pods


def execution_dir(job: Job) -> Path:
    ref = job.status["executionRef"]
    return Path(ref["root"]) / ref["id"]


def recorded(job: Job) -> dict:
    return json.loads((execution_dir(job) / "result.json").read_text())


def two_steps(name: str = "job") -> Job:
    job = submit(
        name, steps=TWO_STEPS, source={"inline": {"src/greeting.txt": "hello from the checkout"}}
    )
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, (job.status, job_controller.log_of(job))
    return job


def execs(pods) -> list[list[str]]:
    return pods.emulator.execs


def step_runs(pods) -> list[str]:
    """The run of every step exec the pod was sent (a step's, or its follower's)."""
    return [a[-1] for a in execs(pods) if a[:3] == ["sh", "-c", kubeexec.record.STEP_SCRIPT]]


# --- seed 004, "What the proof must show" ---------------------------------------------------


def test_1_the_jobs_pod_becomes_ready_and_accepts_exec(pods):
    job = two_steps()
    log = job_controller.log_of(job)
    assert "is Ready" in log
    assert log.index("is Ready") < log.index("streaming the checkout")
    assert kubeexec.driver.step_argv(0, INSTALL) in execs(pods)
    assert kubeexec.driver.step_argv(1, USE) in execs(pods)


def test_2_the_checkout_and_the_shared_steps_stream_into_the_pod(pods):
    job = two_steps()
    assert execs(pods)[:2] == [kubeexec.driver.checkout_argv(), kubeexec.driver.steps_argv()]
    log = job_controller.log_of(job)
    assert "hello from the checkout" in log  # src/greeting.txt, read from /work by a step
    assert "00-install.sh" in log and "01-use.sh" in log  # ls /steps


def test_3_steps_share_one_environment_a_tool_installed_by_one_is_there_for_the_next(pods):
    job = two_steps()
    log = job_controller.log_of(job)
    assert "installed" in log and "tool says hi" in log
    # one exec per step, both in the same pod
    assert step_runs(pods) == [INSTALL, USE]


def test_4_logs_stream_into_one_run_log(pods, admin_api):
    job = two_steps()
    text = admin_api.get(f"{JOBS_URL}/{job.name}/log").content.decode()
    assert text == job_controller.log_of(job)
    order = ["==> step install", "installed", "==> step use", "tool says hi", "streaming /outputs"]
    positions = [text.index(piece) for piece in order]
    assert positions == sorted(positions)


def test_5_outputs_stream_back(pods):
    job = two_steps()
    assert (outputs_of(job.status["executionRef"]) / "report.txt").read_text() == "report\n"
    assert recorded(job)["outputs"] == [{"path": "report.txt", "size": 7}]
    assert execs(pods)[-1] == kubeexec.driver.outputs_argv()


def test_6_the_batch_job_is_deleted_and_its_pod_with_it(pods):
    two_steps()
    assert batch_jobs(pods) == []
    assert pods.pods("default") == []
    assert job_creations(pods) == 1


def test_7_the_result_json_has_the_step_statuses_and_exit_codes(pods):
    job = submit(
        steps=[
            {"name": "ok", "run": "true"},
            {"name": "bad", "run": "echo failing; exit 3"},
            {"name": "never", "run": "true"},
        ]
    )
    job = run_until(job, FINAL)
    result = recorded(job)
    assert result["phase"] == "Failed" and "bad" in result["message"]
    assert [(s["name"], s["status"], s["exitCode"]) for s in result["steps"]] == [
        ("ok", "Succeeded", 0),
        ("bad", "Failed", 3),
        ("never", "Skipped", None),
    ]
    assert reason(job, "Failed") == ("True", "StepFailed")
    assert job.status["steps"] == result["steps"]
    assert batch_jobs(pods) == []


# --- the portal end to end ------------------------------------------------------------------


def test_a_job_posted_to_the_api_runs_as_a_batch_job_with_two_exec_steps_outputs_and_result(
    pods, admin_api
):
    body = {
        "apiVersion": "execution.ayatori.ddupan.top/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "e2e"},
        "spec": {
            "image": IMAGE,
            "steps": TWO_STEPS,
            "source": {"inline": {"src/greeting.txt": "hello from the checkout"}},
            "resources": {"requests": {"cpu": "250m"}},
        },
    }
    response = admin_api.post(JOBS_URL, body, format="json")
    assert response.status_code == 201, response.json()
    job = run_until(Job.objects.get(name="e2e"), FINAL)
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert reason(job, "Succeeded") == ("True", "Completed")
    # the batch Job it produced (seen by the emulator, deleted since)
    (created,) = pods.emulator.posted("jobs")
    pod = created["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ayatori-job" and pod["runtimeClassName"] == "gvisor"
    assert pod["containers"][0]["image"] == IMAGE
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "250m"}}
    assert created["metadata"]["labels"][kubeexec.EXECUTION_LABEL] == str(job.uid)
    assert step_runs(pods) == [INSTALL, USE]
    assert (outputs_of(job.status["executionRef"]) / "report.txt").exists()
    result = recorded(job)
    assert [(s["name"], s["status"], s["exitCode"]) for s in result["steps"]] == [
        ("install", "Succeeded", 0),
        ("use", "Succeeded", 0),
    ]
    assert batch_jobs(pods) == []
    got = admin_api.get(f"{JOBS_URL}/e2e").json()
    assert [s["exitCode"] for s in got["status"]["steps"]] == [0, 0]


# --- timeout, cancel, leftovers, env ---------------------------------------------------------


def _step_running(job: Job) -> Job:
    def running() -> bool:
        nonlocal job
        job = reconcile_job(job)
        return job.phase == JobPhase.RUNNING and any(
            s["status"] == "Running" for s in job.status.get("steps") or []
        )

    assert wait_until(running, timeout=20, interval=0.1), job.status
    return job


def slow_step(tmp_path: Path) -> dict:
    """A step that records its shell's pid outside the pod, then sleeps."""
    return {"name": "slow", "run": f"echo $$ > {tmp_path}/pid && exec sleep 30"}


def killed(tmp_path: Path) -> bool:
    from tests.helpers.localexec import pid_alive

    pid = int((tmp_path / "pid").read_text())
    return wait_until(lambda: not pid_alive(pid), timeout=10, interval=0.05)


def test_a_timeout_kills_the_exec_and_deletes_the_batch_job(pods, tmp_path):
    job = submit(steps=[slow_step(tmp_path)], timeoutSeconds=3)
    job = run_until(job, FINAL, timeout=30)
    assert reason(job, "Failed") == ("True", "DeadlineExceeded")
    assert [(s["status"], s["exitCode"]) for s in job.status["steps"]] == [("Failed", None)]
    assert batch_jobs(pods) == [] and pods.pods("default") == []
    assert killed(tmp_path)


def test_cancel_kills_the_exec_and_deletes_the_batch_job(pods, tmp_path):
    job = _step_running(submit(steps=[slow_step(tmp_path)]))
    assert len(batch_jobs(pods)) == 1
    patch(job, {"spec": {"cancelRequested": True}})
    job = run_until(job, FINAL)
    assert reason(job, "Failed") == ("True", "Cancelled")
    assert [s["status"] for s in job.status["steps"]] == ["Cancelled"]
    assert batch_jobs(pods) == [] and pods.pods("default") == []
    assert killed(tmp_path)


def test_leftover_batch_jobs_of_the_same_job_are_cleaned_up_on_start(pods):
    from tests.jobclasses.kube_support import batch

    def leftover(job_name: str, execution_id: str) -> dict:
        return kubeexec.job_manifest(
            namespace="default",
            job_name=job_name,
            job_uid=execution_id,
            image=IMAGE,
            parameters={},
            effective_resources={},
            env_names=[],
        )

    old = leftover("job", "an-earlier-job-of-this-name")
    other = leftover("another-job", "its-own-execution")
    for manifest in (old, other):
        batch(pods).create_namespaced_job("default", manifest, _request_timeout=5)
    job = two_steps("job")
    names = [j["metadata"]["name"] for j in batch_jobs(pods)]
    assert names == [other["metadata"]["name"]]  # only the other Job's survives
    assert "deleting leftover batch Job " + old["metadata"]["name"] in job_controller.log_of(job)


def test_env_reaches_the_steps_through_a_secret_never_through_the_batch_job(pods):
    from tests.jobclasses.test_job_acceptance import make_secret

    make_secret(token="s3cr3t-value")
    job = submit(
        steps=[{"name": "use", "run": 'test "$TOKEN" = "s3cr3t-$SUFFIX" && test "$MODE" = fast'}],
        env=[
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "MODE", "value": "fast"},
            {"name": "SUFFIX", "value": "value"},
        ],
    )
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, (job.status, job_controller.log_of(job))
    created = pods.emulator.posted("jobs")
    assert "s3cr3t-value" not in json.dumps(created)
    assert "s3cr3t-value" not in json.dumps(execs(pods)) + job_controller.log_of(job)
    secrets = pods.emulator.store.select("", "secrets", "default")
    assert secrets == []  # deleted with the batch Job


# --- crash safety ---------------------------------------------------------------------------


def test_a_restarted_controller_never_starts_a_second_batch_job(pods):
    job = _step_running(submit(steps=[{"name": "s", "run": "sleep 1"}]))
    for _ in range(5):
        job = reconcile_job(job)
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED
    assert job_creations(pods) == 1
    assert step_runs(pods) == ["sleep 1"]


def test_secret_values_read_back_from_the_pod_are_masked_in_the_log_and_outputs(pods):
    from tests.jobclasses.test_job_acceptance import make_secret

    make_secret(token="s3cr3t-value")
    job = submit(
        steps=[
            {"name": "leak", "run": 'echo "TOKEN=$TOKEN MODE=$MODE"'},
            {"name": "keep", "run": 'printf "%s\\n" "$TOKEN" > /outputs/token.txt'},
        ],
        env=[
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "MODE", "value": "fast"},
        ],
    )
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, (job.status, job_controller.log_of(job))
    log = job_controller.log_of(job)
    assert "TOKEN=*** MODE=fast\n" in log
    assert "s3cr3t-value" not in log
    token = outputs_of(job.status["executionRef"]) / "token.txt"
    assert token.read_text() == "***\n"
