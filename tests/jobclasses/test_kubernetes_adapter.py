"""The Kubernetes adapter without exec (seed 003's KubernetesExecutionParameters and test
matrix line "Kubernetes ServiceAccount/runtime 配置缺失且不回退"; seed 004's dry run and
cleanup): the adapter talks to kmock's emulator over real HTTP through the official client."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import call_command

from jobclasses import adapters, kubeexec
from jobclasses.adapters.base import ExecutionRequest
from jobclasses.adapters.kubernetes import driver_spec
from jobclasses.kubeexec.driver import step_argv
from jobclasses.models import JobPhase
from tests.helpers.jobclasses import (
    create,
    job_manifest,
    kubernetes_class,
    reason,
    reconcile_class,
    reconcile_job,
    set_namespace,
)
from tests.jobclasses.kube_support import (
    IMAGE,
    add_runtime_class,
    add_service_account,
    batch_jobs,
    core,
    requests_seen,
    run_until,
    submit,
)

pytestmark = pytest.mark.django_db

PARAMETERS = {
    "serviceAccountName": "ayatori-job",
    "runtimeClassName": "gvisor",
    "scheduling": {
        "nodeSelector": {"ayatori.ddupan.top/node-role": "execution"},
        "tolerations": [
            {
                "key": "ayatori.ddupan.top/execution",
                "operator": "Equal",
                "value": "true",
                "effect": "NoSchedule",
            }
        ],
    },
    "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "imagePullPolicy": "IfNotPresent",
}


def request(**spec) -> ExecutionRequest:
    return ExecutionRequest(
        namespace="team-a",
        name="build",
        uid="0b7c6f0e-1111-2222-3333-444455556666",
        spec={"image": IMAGE, "steps": [{"name": "s", "run": "true"}], **spec},
        parameters=PARAMETERS,
        parameters_name="rootless",
        env={"TOKEN": "s3cr3t-value", "MODE": "fast"},
        effective_resources={
            "requests": {"cpu": "250m", "memory": "256Mi"},
            "limits": {"cpu": "2"},
        },
    )


# --- the manifest ---------------------------------------------------------------------------


def test_the_batch_job_carries_every_parameter_the_image_and_the_effective_resources():
    spec = driver_spec(request(workingDir="src"), dry=False)
    job = spec["manifest"]
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    assert job["metadata"]["namespace"] == "team-a"
    assert job["spec"]["backoffLimit"] == 0
    assert pod["restartPolicy"] == "Never"
    assert pod["serviceAccountName"] == "ayatori-job"
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["nodeSelector"] == {"ayatori.ddupan.top/node-role": "execution"}
    assert pod["tolerations"] == PARAMETERS["scheduling"]["tolerations"]
    assert pod["securityContext"] == PARAMETERS["podSecurityContext"]
    assert container["image"] == IMAGE
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["command"][0] == "sleep"  # the long-lived pod steps exec into
    assert container["workingDir"] == "/work/src"
    assert container["resources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "2"},
    }
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/work", "/steps", "/outputs"}


def test_the_batch_job_is_labelled_with_the_job_identity_and_annotated_with_its_owner():
    job = driver_spec(request(), dry=False)["manifest"]
    labels = job["metadata"]["labels"]
    assert labels[kubeexec.JOB_NAME_LABEL] == "build"
    assert labels[kubeexec.EXECUTION_LABEL] == "0b7c6f0e-1111-2222-3333-444455556666"
    assert labels[kubeexec.MANAGED_BY_LABEL] == kubeexec.MANAGED_BY
    assert job["spec"]["template"]["metadata"]["labels"] == labels  # the pod is found by them
    assert job["metadata"]["annotations"][kubeexec.OWNER_ANNOTATION] == (
        "team-a/build 0b7c6f0e-1111-2222-3333-444455556666"
    )
    # one name per execution: a second create is a 409, never a second Job
    assert job["metadata"]["name"] == kubeexec.batch_job_name(
        "build", labels[kubeexec.EXECUTION_LABEL]
    )
    assert kubeexec.batch_job_name("build", "another-uid") != job["metadata"]["name"]
    assert len(kubeexec.batch_job_name("x" * 253, "u")) <= 52


def test_env_values_live_in_a_secret_the_pod_references_never_in_the_job():
    spec = driver_spec(request(), dry=False)
    job, secret = spec["manifest"], spec["secret"]
    assert "s3cr3t-value" not in json.dumps(job)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [
        {"name": n, "valueFrom": {"secretKeyRef": {"name": job["metadata"]["name"], "key": n}}}
        for n in ("TOKEN", "MODE")
    ]
    assert secret["metadata"]["name"] == job["metadata"]["name"]
    assert secret["metadata"]["labels"] == job["metadata"]["labels"]
    assert secret["stringData"] == {"TOKEN": "s3cr3t-value", "MODE": "fast"}
    assert (
        driver_spec(ExecutionRequest(**{**request().__dict__, "env": {}}), dry=False)["secret"]
        is None
    )


def test_a_job_without_an_image_is_not_accepted_on_a_kubernetes_class(kube):
    add_runtime_class(kube, "gvisor")
    kubernetes_class("rootless", default=True, params_spec={"runtimeClassName": "gvisor"})
    set_namespace("default")
    job = reconcile_job(create(job_manifest("noimage"), namespace="default"))
    assert reason(job, "Accepted") == ("False", "ImageRequired")


# --- readiness ------------------------------------------------------------------------------


def test_a_missing_runtime_class_keeps_the_class_not_ready_until_it_exists(kube):
    job_class = kubernetes_class("rootless", params_spec={"runtimeClassName": "gvisor"})
    assert reason(job_class, "Accepted") == ("True", "Accepted")
    assert reason(job_class, "Ready") == ("False", "RuntimeClassNotFound")
    assert "gvisor" in job_class.status["conditions"][1]["message"]
    add_runtime_class(kube, "gvisor")
    assert reason(reconcile_class("rootless"), "Ready") == ("True", "BackendReachable")


def test_a_class_without_a_runtime_class_is_ready_when_the_api_answers(kube):
    assert reason(kubernetes_class("plain"), "Ready") == ("True", "BackendReachable")


def test_an_unreachable_api_is_backend_unreachable(kube, settings):
    settings.KRUNTIMES_KUBERNETES_HOST = "http://127.0.0.1:9"  # discard port: nothing listens
    job_class = kubernetes_class("rootless", params_spec={"runtimeClassName": "gvisor"})
    assert reason(job_class, "Ready") == ("False", "BackendUnreachable")


def test_an_unknown_controller_is_still_unsupported_next_to_kubernetes():
    from tests.helpers.jobclasses import class_manifest, kubernetes_parameters_manifest

    create(kubernetes_parameters_manifest("rootless"))
    create(
        class_manifest(
            "other",
            controller="example.com/somebody-else",
            parameters="rootless",
            parameters_kind="KubernetesExecutionParameters",
        )
    )
    assert reason(reconcile_class("other"), "Accepted") == ("False", "UnsupportedController")
    assert adapters.KUBERNETES in adapters.supported()


# --- the ServiceAccount, at scheduling time -------------------------------------------------


def test_a_missing_service_account_keeps_the_job_unscheduled_and_never_uses_default(kube):
    add_runtime_class(kube, "gvisor")
    kubernetes_class("rootless", default=True, params_spec=PARAMETERS)
    set_namespace("default")
    default_account = core(kube).read_namespaced_service_account(
        "default", "default", _request_timeout=5
    )
    assert default_account.metadata.name == "default"  # there, and never taken instead
    job = submit()
    assert reason(job, "Accepted") == ("True", "Accepted")
    assert reason(job, "Scheduled") == ("False", "ServiceAccountNotFound")
    assert "ayatori-job" in job.status["message"] and "default" in job.status["message"]
    assert "executionRef" not in job.status
    assert job.phase == JobPhase.PENDING
    assert batch_jobs(kube) == []


# --- the dry run ----------------------------------------------------------------------------


def test_run_job_dry_run_prints_the_job_and_every_call_and_makes_none(kube, tmp_path):
    add_runtime_class(kube, "gvisor")
    add_service_account(kube, "default", "ayatori-job")
    kubernetes_class("rootless", default=True, params_spec=PARAMETERS)
    set_namespace("default")
    before = requests_seen(kube)
    manifest = job_manifest(
        "build",
        image=IMAGE,
        steps=[
            {"name": "install", "run": "echo tool > /usr/local/bin/t"},
            {"name": "use", "run": "t"},
        ],
        source={"inline": {"hello.txt": "hi"}},
        env=[{"name": "MODE", "value": "fast"}],
    )
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    out = io.StringIO()
    call_command("run-job", "-f", str(path), "--dry-run", stdout=out)
    text = out.getvalue()
    assert requests_seen(kube) == before  # the emulator saw no request
    assert batch_jobs(kube) == []
    assert '"kind": "Job"' in text and '"serviceAccountName": "ayatori-job"' in text
    assert '"runtimeClassName": "gvisor"' in text and IMAGE in text
    printed = [line for line in text.splitlines() if line.startswith("dry-run: ")]
    # the record on the batch Job: created, prepared, each step Running and ended, final
    patches = [line for line in printed if line.split()[1] == "patch"]
    assert len(patches) == 7 and all(kubeexec.RECORD_ANNOTATION in line for line in patches)
    lines = [line for line in printed if line.split()[1] != "patch"]
    verbs = [line.split()[1] for line in lines]
    assert verbs == [
        "list",
        "create",
        "create",
        "wait",
        "exec",
        "exec",
        "exec",
        "exec",
        "exec",
        "delete",
        "delete",
    ]
    assert "Secret" in lines[1] and "batch/v1 Job" in lines[2]
    assert '"stringData": {\n    "MODE": "<redacted>"' in text
    assert 'argv=["tar", "-xf", "-", "-C", "/work"]' in lines[4]  # the checkout
    assert 'argv=["tar", "-xf", "-", "-C", "/steps"]' in lines[5]
    assert json.dumps(step_argv(0, "echo tool > /usr/local/bin/t")) in lines[6]
    assert json.dumps(step_argv(1, "t")) in lines[7]
    assert 'argv=["tar", "-cf", "-", "-C", "/outputs", "."]' in lines[8]
    assert 'propagationPolicy="Background"' in lines[9]
    assert '"phase": "Succeeded"' in text


def test_run_job_dry_run_refuses_a_job_that_would_not_be_accepted(kube, tmp_path):
    from django.core.management.base import CommandError

    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job_manifest("build", image=IMAGE)))
    with pytest.raises(CommandError, match="NoDefaultJobClass"):
        call_command("run-job", "-f", str(path), "--dry-run", stdout=io.StringIO())


@pytest.mark.processes
def test_the_dry_run_setting_runs_a_job_to_its_end_printing_every_call_and_making_none(
    kube, settings
):
    from jobclasses import job_controller

    add_runtime_class(kube, "gvisor")
    kubernetes_class("rootless", default=True, params_spec=PARAMETERS)
    set_namespace("default")
    settings.KRUNTIMES_KUBERNETES_DRY_RUN = True
    assert reason(reconcile_class("rootless"), "Ready") == ("True", "DryRun")
    before = requests_seen(kube)
    job = run_until(
        submit(steps=[{"name": "a", "run": "echo a"}]), {JobPhase.SUCCEEDED, JobPhase.FAILED}
    )
    assert job.phase == JobPhase.SUCCEEDED, job.status
    assert requests_seen(kube) == before  # no ServiceAccount read, no create, nothing
    log = job_controller.log_of(job)
    assert "dry-run: create batch/v1 Job" in log
    assert (
        f"dry-run: exec pod <pod> -n default -c job argv={json.dumps(step_argv(0, 'echo a'))}"
        in log
    )
    assert "dry-run: delete batch/v1 Job" in log
    assert batch_jobs(kube) == []


@pytest.mark.processes
def test_a_pod_that_never_becomes_ready_fails_the_job_and_its_batch_job_is_deleted(kube):
    add_runtime_class(kube, "gvisor")
    add_service_account(kube, "default", "ayatori-job")
    kubernetes_class("rootless", default=True, params_spec=PARAMETERS)
    set_namespace("default")
    job = run_until(submit(), {JobPhase.SUCCEEDED, JobPhase.FAILED})  # pods here stay Pending
    assert reason(job, "Failed") == ("True", "StepFailed")
    assert "did not become Ready" in job.status["message"]
    assert [s["status"] for s in job.status["steps"]] == ["Skipped"]
    assert len(kube.emulator.posted("jobs")) == 1
    assert batch_jobs(kube) == [] and kube.pods("default") == []
