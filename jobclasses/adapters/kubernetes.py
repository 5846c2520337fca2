"""The Kubernetes adapter (``execution.ayatori.ddupan.top/kubernetes``, seed 004 mechanics):
one batch/v1 Job per Job in the Job's namespace, driven by a detached driver process
(``jobclasses.kubeexec``).

The record is in the cluster, not in the control worker's data directory (an emptyDir that a
rescheduled worker loses with its drivers): the batch Job, found by its execution label,
carries the record annotation (``kubeexec.record``: phase, steps with status and exit code,
whether the pod was prepared) and its pod keeps each started step's pid, log and exit code.
``observe`` decides, in order:

1. a final ``result.json`` in the directory: the result; the batch Job and its Secret are
   deleted now that it is known (a failed delete is retried by the next observation);
2. a live driver: what it has recorded so far;
3. no driver (the directory gone or its driver dead): the batch Job by its labels. There:
   ``detached`` with the record's steps, and the Job controller calls ``resume``, which starts
   a driver that adopts the batch Job (never creates one) and goes on from its record; not
   there: ``Unknown`` (the controller's ``ExecutionLost``), never re-run.

Parameters (``KubernetesExecutionParameters``): ``serviceAccountName`` (must exist in the
Job's namespace when the Job is scheduled; never replaced by ``default``), ``runtimeClassName``
(must exist for the class to be Ready), ``scheduling.nodeSelector``/``tolerations``,
``podSecurityContext``, ``imagePullPolicy``.

``KRUNTIMES_KUBERNETES_DRY_RUN``: the driver prints the batch Job and every call into the
Job's log instead of making them, and no call reaches the cluster (readiness included).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from jobclasses import kubeexec, localexec
from jobclasses.kubeexec import driver, record
from jobclasses.localexec import lock
from jobclasses.localexec import result as local_result
from jobclasses.localexec.client import KILL_GRACE_SECONDS
from jobclasses.localexec.layout import ExecutionDir

from .base import BackendError, ExecutionRequest, NotReadyToStart, Observation, Readiness
from .local import steps_of

CONTROLLER_NAME = "execution.ayatori.ddupan.top/kubernetes"
REF_TYPE = "kubernetes"
DRIVER = "jobclasses.kubeexec.driver"  # the runner module localexec.launch starts

# reasons
READY = "BackendReachable"
DRY_RUN = "DryRun"
UNREACHABLE = "BackendUnreachable"
RUNTIME_CLASS_NOT_FOUND = "RuntimeClassNotFound"
SERVICE_ACCOUNT_NOT_FOUND = "ServiceAccountNotFound"
IMAGE_REQUIRED = "ImageRequired"


def dry_run() -> bool:
    return bool(getattr(settings, "KRUNTIMES_KUBERNETES_DRY_RUN", False))


def request_timeout() -> float:
    return float(getattr(settings, "KRUNTIMES_KUBERNETES_REQUEST_TIMEOUT_SECONDS", 30.0))


def connection() -> dict[str, str]:
    return {
        "host": getattr(settings, "KRUNTIMES_KUBERNETES_HOST", None) or "",
        "kubeconfig": getattr(settings, "KRUNTIMES_KUBECONFIG", "") or "",
    }


def cluster() -> kubeexec.ApiCluster:
    from portal.kube import api_client

    return kubeexec.ApiCluster(
        api_client(host=connection()["host"] or None), request_timeout=request_timeout()
    )


def work_root(parameters_name: str) -> Path:
    return Path(settings.DATA_DIR) / "kubernetes-jobs" / parameters_name


def _engine_ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "local", "dir": str(Path(ref["root"]) / ref["id"]), "id": ref["id"]}


def _failure(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or str(exc)
    return f"HTTP {status}: {reason}" if status else str(reason)


def driver_spec(request: ExecutionRequest, *, dry: bool) -> dict[str, Any]:
    """What the driver reads from ``spec.json``: the manifests, the steps, the files."""
    spec = request.spec
    steps = [{"name": step.name, "run": step.run} for step in steps_of(spec)]
    env = dict(request.env)
    manifest = kubeexec.job_manifest(
        namespace=request.namespace,
        job_name=request.name,
        job_uid=request.uid,
        image=spec.get("image") or "",
        parameters=request.parameters,
        effective_resources=request.effective_resources,
        env_names=list(env),
        working_dir=spec.get("workingDir") or "",
        image_pull_secrets=spec.get("imagePullSecrets"),
    )
    return {
        "steps": steps,
        "killGraceSeconds": KILL_GRACE_SECONDS,
        "timeoutSeconds": spec.get("timeoutSeconds"),
        "jobName": request.name,
        "executionId": request.uid,
        "manifest": manifest,
        "secret": kubeexec.env_secret(manifest, env),
        "files": dict((spec.get("source") or {}).get("inline") or {}),
        "connection": connection(),
        "requestTimeoutSeconds": request_timeout(),
        "podReadyTimeoutSeconds": float(
            getattr(settings, "KRUNTIMES_KUBERNETES_POD_READY_TIMEOUT_SECONDS", 600.0)
        ),
        "dryRun": dry,
        # the values from Secrets: the driver masks them in what it reads from the pod
        "masked": list(request.masked),
    }


class KubernetesAdapter:
    controller_name = CONTROLLER_NAME
    parameter_kinds = ("KubernetesExecutionParameters",)

    def admit(self, job_spec: Mapping[str, Any], parameters: Mapping[str, Any]):
        if not job_spec.get("image"):
            return IMAGE_REQUIRED, "a Job on a Kubernetes class needs spec.image for its pod"
        return None

    def readiness(self, parameters_name: str, parameters: Mapping[str, Any]) -> Readiness:
        if dry_run():
            return Readiness(True, DRY_RUN, "dry run: Jobs print their calls, none is made")
        name = parameters.get("runtimeClassName")
        try:
            api = cluster()
            if name:
                if not api.runtime_class_exists(name):
                    return Readiness(
                        False, RUNTIME_CLASS_NOT_FOUND, f"RuntimeClass {name} does not exist"
                    )
            else:
                api.list_runtime_classes()
        except Exception as exc:  # noqa: BLE001 - unreachable or refusing: not Ready
            return Readiness(False, UNREACHABLE, f"the Kubernetes API: {_failure(exc)}")
        found = f" with RuntimeClass {name}" if name else ""
        return Readiness(True, READY, f"Jobs run as batch/v1 Jobs{found}")

    def _check_service_account(self, request: ExecutionRequest) -> None:
        name = request.parameters.get("serviceAccountName")
        if not name or dry_run():
            return
        try:
            exists = cluster().service_account_exists(request.namespace, name)
        except Exception as exc:  # noqa: BLE001 - try again later
            raise NotReadyToStart(UNREACHABLE, f"the Kubernetes API: {_failure(exc)}") from exc
        if not exists:
            raise NotReadyToStart(
                SERVICE_ACCOUNT_NOT_FOUND,
                f"ServiceAccount {name} does not exist in namespace {request.namespace}: the "
                "Job waits for it (it never runs as the default ServiceAccount)",
            )

    def plan(self, request: ExecutionRequest) -> dict[str, Any]:
        self._check_service_account(request)
        return {
            "type": REF_TYPE,
            "root": str(work_root(request.parameters_name)),
            "id": request.uid,
            "namespace": request.namespace,
            "jobName": kubeexec.batch_job_name(request.name, request.uid),
            "dryRun": dry_run(),
        }

    def ensure(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        directory = Path(_engine_ref(ref)["dir"])
        if not directory.exists():
            self._check_service_account(request)
        spec = driver_spec(request, dry=bool(ref.get("dryRun")))
        localexec.launch(Path(ref["root"]), ref["id"], json.dumps(spec), runner=DRIVER)

    def observe(self, ref: Mapping[str, Any]) -> Observation:
        engine = _engine_ref(ref)
        directory = Path(engine["dir"])
        seen = localexec.observe(engine)
        if seen.finished:
            self._delete_objects(ref)  # the result is known: the record has served
            return Observation.of(seen)
        if ref.get("dryRun") or lock.held(ExecutionDir(directory).lock):
            return Observation.of(seen, exists=directory.exists())
        return self._observe_cluster(ref)

    def _observe_cluster(self, ref: Mapping[str, Any]) -> Observation:
        """No driver: the batch Job of the execution, found by its labels, says the rest."""
        try:
            found = cluster().list_jobs(ref["namespace"], kubeexec.execution_selector(ref["id"]))
        except Exception as exc:  # noqa: BLE001 - nothing is known either way
            raise BackendError(f"listing batch Job {ref['jobName']}: {_failure(exc)}") from exc
        if not found:
            return Observation(
                local_result.UNKNOWN,
                f"batch Job {ref['namespace']}/{ref['jobName']} is gone from the cluster: the "
                "result is unknown (it is not re-run)",
            )
        recorded = record.of(found[0]) or {}
        return Observation(
            phase=local_result.RUNNING,
            message="its driver is gone: resuming from the batch Job's record",
            steps=list(recorded.get("steps") or []),
            start_time=recorded.get("startTime"),
            detached=True,
        )

    def resume(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        """A driver that adopts the batch Job and goes on from its record; a stale directory
        (its driver dead) is replaced. Never creates a batch Job."""
        engine = _engine_ref(ref)
        if lock.held(ExecutionDir(Path(engine["dir"])).lock):
            return
        localexec.delete(engine)
        spec = {**driver_spec(request, dry=False), "resume": True}
        localexec.launch(Path(ref["root"]), ref["id"], json.dumps(spec), runner=DRIVER)

    def _delete_objects(self, ref: Mapping[str, Any]) -> None:
        """The batch Job (pods in the background) and the env Secret, if they are there."""
        if ref.get("dryRun"):  # the dry-run driver printed these deletes
            return
        try:
            api = cluster()
            api.delete("Job", ref["namespace"], ref["jobName"])
            api.delete("Secret", ref["namespace"], ref["jobName"])
        except Exception as exc:  # noqa: BLE001 - the caller retries
            raise BackendError(f"deleting batch Job {ref['jobName']}: {_failure(exc)}") from exc

    def cancel(self, ref: Mapping[str, Any]) -> None:
        engine = _engine_ref(ref)
        localexec.cancel(engine)
        if not lock.held(ExecutionDir(Path(engine["dir"])).lock):
            self._delete_objects(ref)  # no driver is there to do it

    def delete(self, ref: Mapping[str, Any]) -> None:
        localexec.delete(_engine_ref(ref))
        self._delete_objects(ref)

    def log(self, ref: Mapping[str, Any], limit_bytes: int | None = None) -> str:
        return localexec.read_log(_engine_ref(ref), limit_bytes=limit_bytes)


def outputs_of(ref: Mapping[str, Any]) -> Path:
    """Where the execution's ``/outputs`` came back to."""
    return driver.outputs_dir(ExecutionDir(Path(_engine_ref(ref)["dir"])))
