"""A Job through the OpenSandbox adapter (seed 003's OpenSandboxExecutionParameters and its
test-matrix lines: API key Secret missing and rotated, backend health recovery,
allowSecretEnv/allowImageAuth) against the local stand-in (``tests/helpers/opensandbox_server``):
the ``opensandbox`` SDK talks real HTTP to it, its commands run for real."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from jobclasses import job_controller
from jobclasses.adapters import opensandbox as adapter_module
from jobclasses.models import Job, JobPhase
from portal.machinery import store
from portal.machinery.registry import registry
from tests.helpers.jobclasses import (
    API_VERSION,
    class_manifest,
    create,
    delete,
    job_manifest,
    patch,
    reason,
    reconcile_class,
    reconcile_job,
    set_namespace,
)
from tests.helpers.opensandbox_server import LIFECYCLE, OpenSandboxStandIn
from tests.helpers.operator import OPERATOR
from tests.helpers.secrets import b64, make_secret

pytestmark = [pytest.mark.django_db, pytest.mark.processes]

CONTROLLER = "execution.ayatori.ddupan.top/opensandbox"
KEY_REF = {"namespace": "ayatori-system", "name": "opensandbox-api", "key": "api-key"}
TWO_STEPS = [
    {"name": "build", "run": 'echo built > artifact.txt; echo "building $GREETING"'},
    {
        "name": "test",
        "run": 'test "$(cat artifact.txt)" = built && echo tested'
        ' && echo report > "$KRUNTIME_OUTPUTS_DIR/report.txt"',
    },
]


@pytest.fixture
def standin():
    server = OpenSandboxStandIn(api_key="key-1").start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    settings.KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS = 5.0
    set_namespace("default")
    return tmp_path


def api_key_secret(value: str = "key-1"):
    return make_secret(KEY_REF["namespace"], KEY_REF["name"], **{KEY_REF["key"]: value})


def rotate(value: str) -> None:
    secrets = registry.get("", "v1", "secrets")
    store.patch(
        secrets,
        KEY_REF["namespace"],
        KEY_REF["name"],
        {"data": {KEY_REF["key"]: b64(value)}},
        context=OPERATOR,
    )


def sandbox_class(standin, name="microvm", *, with_secret=True, **params):
    if with_secret:
        api_key_secret(standin.api_key)
    spec = {
        "endpoint": standin.url,
        "allowInsecureHTTP": True,
        "apiKeySecretRef": KEY_REF,
        **params,
    }
    create(
        {
            "apiVersion": API_VERSION,
            "kind": "OpenSandboxExecutionParameters",
            "metadata": {"name": name},
            "spec": spec,
        }
    )
    create(
        class_manifest(
            name,
            controller=CONTROLLER,
            parameters=name,
            parameters_kind="OpenSandboxExecutionParameters",
            default=True,
            resources={
                "defaults": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "2", "memory": "2Gi"},
                }
            },
        )
    )
    return reconcile_class(name)


def submit(name="job", **spec) -> Job:
    spec.setdefault("image", "python:3.11")
    return reconcile_job(create(job_manifest(name, **spec), namespace="default"))


def run_until(job, phases, timeout: float = 30.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        job = reconcile_job(job)
        if job is None or job.phase in phases:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"{job} stayed {job.phase}: {job.status}")
        time.sleep(0.1)


FINAL = {JobPhase.SUCCEEDED, JobPhase.FAILED}


def record_dir(job):
    ref = job.status["executionRef"]
    return adapter_module.Record(ref).path


# --- the contract ----------------------------------------------------------------------------


def test_the_stand_in_serves_the_server_packages_own_routes():
    for route in [
        ("POST", "/sandboxes"),
        ("GET", "/sandboxes"),
        ("GET", "/sandboxes/{sandbox_id}"),
        ("DELETE", "/sandboxes/{sandbox_id}"),
        ("GET", "/sandboxes/{sandbox_id}/endpoints/{port}"),
    ]:
        assert route in LIFECYCLE


# --- the whole path --------------------------------------------------------------------------


def test_two_steps_share_one_sandbox_and_return_outputs_result_and_log(standin):
    cls = sandbox_class(standin)
    assert reason(cls, "Ready") == ("True", "BackendReachable")
    job = submit(
        steps=TWO_STEPS,
        env=[{"name": "GREETING", "value": "hi"}],
        source={"inline": {"src/file.txt": "content"}},
    )
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert reason(job, "Succeeded") == ("True", "Completed")
    assert [(s["name"], s["status"], s["exitCode"]) for s in job.status["steps"]] == [
        ("build", "Succeeded", 0),
        ("test", "Succeeded", 0),
    ]
    assert all(s["startedAt"] and s["finishedAt"] for s in job.status["steps"])
    # one sandbox, from the Job's image, env and the class's limits; deleted at the end
    assert len(standin.created) == 1
    created = standin.created[0]
    assert created.image.uri == "python:3.11"
    assert created.env["GREETING"] == "hi"
    assert created.metadata["execution.ayatori.ddupan.top/job-uid"] == str(job.uid)
    assert created.entrypoint == adapter_module.ENTRYPOINT
    assert standin.live() == [] and len(standin.deleted) == 1
    # each step was one execd command
    assert len(standin.commands) == 2
    log = job_controller.log_of(job)
    assert log.index("==> step build") < log.index("building hi") < log.index("tested")
    result = json.loads((record_dir(job) / "result.json").read_text())
    assert result["phase"] == "Succeeded"
    assert [(s["name"], s["status"], s["exitCode"]) for s in result["steps"]] == [
        ("build", "Succeeded", 0),
        ("test", "Succeeded", 0),
    ]
    assert (record_dir(job) / "outputs" / "report.txt").read_text() == "report\n"


def test_inline_source_reaches_the_steps_in_the_working_dir(standin):
    sandbox_class(standin)
    job = submit(
        steps=[{"name": "check", "run": 'test "$(cat file.txt)" = content'}],
        source={"inline": {"src/file.txt": "content"}},
        workingDir="src",
    )
    assert run_until(job, FINAL).phase == JobPhase.SUCCEEDED


def test_a_failing_step_fails_the_job_with_its_exit_code_and_skips_the_rest(standin):
    sandbox_class(standin)
    steps = [
        {"name": "ok", "run": "true"},
        {"name": "bad", "run": "echo broken; exit 3"},
        {"name": "never", "run": "true"},
    ]
    job = run_until(submit(steps=steps), FINAL)
    assert reason(job, "Failed") == ("True", "StepFailed")
    assert [(s["name"], s["status"], s["exitCode"]) for s in job.status["steps"]] == [
        ("ok", "Succeeded", 0),
        ("bad", "Failed", 3),
        ("never", "Skipped", None),
    ]
    assert "bad" in job.status["message"]
    assert "broken" in job_controller.log_of(job)
    assert standin.live() == []


# --- resources and pool ----------------------------------------------------------------------


def test_admission_only_sends_the_limits_as_resource_limits_and_no_requests(standin):
    sandbox_class(standin, requestMapping="AdmissionOnly", poolRef="microvm-pool")
    job = run_until(submit(resources={"limits": {"cpu": "3"}}), FINAL)
    assert job.phase == JobPhase.SUCCEEDED
    created = standin.created[0]
    assert created.resource_limits.root == {"cpu": "3", "memory": "2Gi"}
    assert created.resource_requests is None
    assert created.extensions == {"poolRef": "microvm-pool"}


def test_native_sends_requests_and_limits(standin):
    sandbox_class(standin, requestMapping="Native")
    run_until(submit(resources={"requests": {"cpu": "500m"}}), FINAL)
    created = standin.created[0]
    assert created.resource_limits.root == {"cpu": "2", "memory": "2Gi"}
    assert created.resource_requests.root == {"cpu": "500m", "memory": "1Gi"}
    assert not created.extensions  # no poolRef: no extension


def test_a_resource_without_a_limit_gets_its_request_as_the_limit():
    limits, requests = adapter_module.resource_mapping(
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": 2}}, "AdmissionOnly"
    )
    assert limits == {"cpu": "2", "memory": "1Gi"} and requests is None


# --- cancel and timeout ----------------------------------------------------------------------


def test_cancel_while_running_deletes_the_sandbox(standin):
    sandbox_class(standin)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 30"}]), {JobPhase.RUNNING})
    assert len(standin.live()) == 1
    patch(job, {"spec": {"cancelRequested": True}})
    job = run_until(job, FINAL)
    assert reason(job, "Failed") == ("True", "Cancelled")
    assert job.status["steps"][0]["status"] == "Cancelled"
    assert standin.live() == [] and len(standin.deleted) == 1


def test_a_timeout_deletes_the_sandbox_deadline_exceeded(standin):
    sandbox_class(standin)
    steps = [{"name": "slow", "run": "sleep 30"}, {"name": "after", "run": "true"}]
    job = run_until(submit(steps=steps, timeoutSeconds=3), {JobPhase.RUNNING})
    job = run_until(job, FINAL)
    assert reason(job, "Failed") == ("True", "DeadlineExceeded")
    assert [s["status"] for s in job.status["steps"]] == ["Failed", "Skipped"]
    assert standin.live() == []
    # the sandbox's own lifetime is a safety net beyond the Job's timeout
    assert standin.created[0].timeout == 3 + adapter_module.LIFETIME_MARGIN_SECONDS


def test_deleting_a_running_job_deletes_its_sandbox_and_record(standin):
    sandbox_class(standin)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 30"}]), {JobPhase.RUNNING})
    path = record_dir(job)
    delete(job)
    assert reconcile_job(job) is None
    assert standin.live() == [] and not path.exists()


# --- restart safety --------------------------------------------------------------------------


def test_a_restarted_controller_finds_its_sandbox_and_never_reruns_a_step(standin, data_dir):
    sandbox_class(standin)
    steps = [
        {"name": "once", "run": "echo ran >> $HOME/count; sleep 1"},
        {"name": "b", "run": "true"},
    ]
    job = run_until(submit(steps=steps), {JobPhase.RUNNING})
    # the controller lost everything it kept locally (a new machine): only the executionRef
    # in the Job's status is left, and observing goes on from it
    path = record_dir(job)
    sandbox_id = json.loads((path / "state.json").read_text())["sandboxId"]
    shutil.rmtree(path)
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert len(standin.created) == 1  # never a second sandbox
    assert (standin.sandboxes[sandbox_id].root / "count").read_text() == "ran\n"  # ran once
    # step "once" was started again after the loss, and its claim in the sandbox kept it
    # from running a second time
    starts = [c for c in standin.commands if c["command"].startswith("mkdir .steps/0 ")]
    assert len(starts) == 2
    assert [s["status"] for s in job.status["steps"]] == ["Succeeded", "Succeeded"]


def test_a_lost_sandbox_is_result_unknown_and_never_rerun(standin):
    sandbox_class(standin)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 30"}]), {JobPhase.RUNNING})
    for sandbox in standin.live():
        standin._terminate(sandbox)
    job = reconcile_job(job)
    assert reason(job, "ResultUnknown") == ("True", "ExecutionLost")
    assert len(standin.created) == 1


def _params():
    from jobclasses.models import OpenSandboxExecutionParameters

    return OpenSandboxExecutionParameters.objects.get(name="microvm")


def test_ensure_twice_creates_one_sandbox(standin):
    sandbox_class(standin)
    job = submit(steps=[{"name": "a", "run": "true"}])
    job = Job.objects.get(pk=job.pk)
    request = job_controller._request(job, job.status, _params(), {})
    adapter = adapter_module.OpenSandboxAdapter()
    adapter.ensure(job.status["executionRef"], request)
    (record_dir(job) / "state.json").unlink()  # the record of the sandbox id is lost
    adapter.ensure(job.status["executionRef"], request)
    assert len(standin.created) == 1


def test_a_hung_backend_call_times_out_and_the_job_goes_on_when_it_answers(standin, settings):
    sandbox_class(standin)
    job = submit(steps=[{"name": "a", "run": "true"}])
    assert reason(job, "Scheduled") == ("True", "ExecutionCreated")  # the sandbox exists
    settings.KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS = 1.0
    standin.hang_commands = True  # starting the step: the event stream never comes
    started = time.monotonic()
    job = reconcile_job(job)
    assert time.monotonic() - started < 5
    assert reason(job, "ResultUnknown") == ("True", "ObserveFailed")
    standin.hang_commands = False
    assert run_until(job, FINAL).phase == JobPhase.SUCCEEDED


def test_cancel_with_the_local_record_lost_still_cancels(standin):
    sandbox_class(standin)
    job = run_until(submit(steps=[{"name": "slow", "run": "sleep 30"}]), {JobPhase.RUNNING})
    shutil.rmtree(record_dir(job))
    patch(job, {"spec": {"cancelRequested": True}})
    job = run_until(job, FINAL)
    assert reason(job, "Failed") == ("True", "Cancelled")
    assert standin.live() == []


# --- the API key Secret ----------------------------------------------------------------------


def test_a_missing_api_key_secret_makes_the_class_not_ready_and_holds_jobs(standin):
    cls = sandbox_class(standin, with_secret=False)
    status, why = reason(cls, "Ready")
    assert (status, why) == ("False", "APIKeyNotFound")
    assert "ayatori-system/opensandbox-api" in reason_message(cls)
    job = submit()
    assert reason(job, "Accepted") == ("True", "Accepted")
    assert reason(job, "Scheduled") == ("False", "JobClassNotReady")
    assert "APIKeyNotFound" in job.status["message"]
    assert standin.created == []
    api_key_secret(standin.api_key)
    assert reason(reconcile_class("microvm"), "Ready") == ("True", "BackendReachable")
    assert run_until(job, FINAL).phase == JobPhase.SUCCEEDED


def test_a_secret_deleted_after_the_class_was_ready_holds_the_job_api_key_not_found(standin):
    sandbox_class(standin)  # Ready
    secrets = registry.get("", "v1", "secrets")
    store.delete(secrets, KEY_REF["namespace"], KEY_REF["name"], context=OPERATOR)
    job = submit()
    assert reason(job, "Scheduled") == ("False", "APIKeyNotFound")
    assert "ayatori-system/opensandbox-api" in job.status["message"]
    assert standin.created == []
    assert reason(reconcile_class("microvm"), "Ready") == ("False", "APIKeyNotFound")


def test_a_missing_key_in_the_secret_is_not_ready_too(standin):
    make_secret(KEY_REF["namespace"], KEY_REF["name"], other="x")
    cls = sandbox_class(standin, with_secret=False)
    assert reason(cls, "Ready") == ("False", "APIKeyNotFound")


def reason_message(obj) -> str:
    from tests.helpers.jobclasses import condition

    return condition(obj, "Ready").get("message", "")


def test_a_rotated_key_is_used_by_the_next_call_without_a_restart(standin):
    sandbox_class(standin)
    job = run_until(
        submit(steps=[{"name": "a", "run": "sleep 1"}, {"name": "b", "run": "true"}]),
        {JobPhase.RUNNING},
    )
    # the backend now accepts only the new key; the Secret is rotated
    standin.api_key = "key-2"
    assert reason(reconcile_class("microvm"), "Ready") == ("False", "APIKeyRejected")
    rotate("key-2")
    assert reason(reconcile_class("microvm"), "Ready") == ("True", "BackendReachable")
    job = run_until(job, FINAL)
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert standin.live() == []  # deleted with the new key
    assert "key-2" not in standin.refused_keys
    second = run_until(submit("second"), FINAL)
    assert second.phase == JobPhase.SUCCEEDED
    shown = json.dumps([job.status, second.status]) + job_controller.log_of(job)
    assert "key-1" not in shown and "key-2" not in shown


# --- health --------------------------------------------------------------------------------


def test_health_down_is_not_ready_and_health_back_is_ready_again(standin):
    assert reason(sandbox_class(standin), "Ready") == ("True", "BackendReachable")
    standin.healthy = False
    assert reason(reconcile_class("microvm"), "Ready") == ("False", "BackendUnreachable")
    job = submit()
    assert reason(job, "Scheduled") == ("False", "JobClassNotReady")
    assert standin.created == []
    standin.healthy = True
    assert reason(reconcile_class("microvm"), "Ready") == ("True", "BackendReachable")
    assert run_until(job, FINAL).phase == JobPhase.SUCCEEDED


def test_an_unreachable_endpoint_is_not_ready(standin):
    cls = sandbox_class(standin)
    patch(_params(), {"spec": {"endpoint": "http://127.0.0.1:9"}})
    assert reason(reconcile_class(cls.name), "Ready") == ("False", "BackendUnreachable")


# --- allowSecretEnv / allowImageAuth --------------------------------------------------------


SECRET_ENV = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}]


def test_secret_env_is_refused_when_not_allowed(standin):
    sandbox_class(standin, allowSecretEnv=False)
    make_secret("default", "creds", token="t0ken")
    job = submit(env=SECRET_ENV)
    assert reason(job, "Accepted") == ("False", "SecretEnvNotAllowed")
    assert standin.created == []


def test_secret_env_reaches_the_steps_when_allowed(standin):
    sandbox_class(standin, allowSecretEnv=True)
    make_secret("default", "creds", token="t0ken")
    job = run_until(
        submit(env=SECRET_ENV, steps=[{"name": "a", "run": 'test "$TOKEN" = t0ken'}]), FINAL
    )
    assert job.phase == JobPhase.SUCCEEDED
    assert standin.created[0].env["TOKEN"] == "t0ken"


def _pull_secret():
    config = {"auths": {"registry.example.com": {"username": "robot", "password": "pw"}}}
    return make_secret("default", "pull", **{".dockerconfigjson": json.dumps(config)})


def test_image_auth_is_refused_when_not_allowed(standin):
    sandbox_class(standin, allowImageAuth=False)
    _pull_secret()
    job = submit(image="registry.example.com/team/app:1", imagePullSecrets=[{"name": "pull"}])
    assert reason(job, "Accepted") == ("False", "ImageAuthNotAllowed")
    assert standin.created == []


def test_image_auth_is_sent_when_allowed(standin):
    sandbox_class(standin, allowImageAuth=True)
    _pull_secret()
    job = submit(image="registry.example.com/team/app:1", imagePullSecrets=[{"name": "pull"}])
    assert run_until(job, FINAL).phase == JobPhase.SUCCEEDED
    auth = standin.created[0].image.auth
    assert (auth.username, auth.password) == ("robot", "pw")


def test_a_job_without_an_image_is_refused(standin):
    sandbox_class(standin)
    job = reconcile_job(create(job_manifest("noimage"), namespace="default"))
    assert reason(job, "Accepted") == ("False", "ImageRequired")


def test_secret_values_are_masked_in_the_log_outputs_and_record(standin):
    sandbox_class(standin, allowSecretEnv=True)
    make_secret("default", "creds", token="t0ken-s3cr3t")
    steps = [
        {"name": "a", "run": 'echo "TOKEN=$TOKEN"; echo "$TOKEN" > "$KRUNTIME_OUTPUTS_DIR/t.txt"'},
        {"name": "b", "run": "printf 'u:%s' \"$TOKEN\" | base64"},
    ]
    job = run_until(submit(env=SECRET_ENV, steps=steps), FINAL)
    assert job.phase == JobPhase.SUCCEEDED, job.status
    log = job_controller.log_of(job)
    assert "TOKEN=***\n" in log and log.count("***") == 2, log
    assert (record_dir(job) / "outputs" / "t.txt").read_text() == "***\n"
    for path in record_dir(job).rglob("*"):  # state.json keeps the reference, not the value
        if path.is_file():
            assert b"t0ken-s3cr3t" not in path.read_bytes(), path
