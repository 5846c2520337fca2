"""The objects one execution creates: its batch/v1 Job and, when the Job has env, the Secret
holding the resolved values (seed 004's "ephemeral Secret and pod env": values never appear
in the Job object, in an exec argv or in the log).

Pure functions of the request: the dry run prints exactly what the driver would create.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

GROUP = "execution.ayatori.ddupan.top"
# the Ayatori Job's identity: its name (a label value, hashed when too long) and namespace
JOB_NAME_LABEL = f"{GROUP}/job-name"
# the execution: the Ayatori Job's UID (a re-created Job is another execution)
EXECUTION_LABEL = f"{GROUP}/execution-id"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "kruntimes-portal"
OWNER_ANNOTATION = f"{GROUP}/owner"  # "<namespace>/<name> <uid>" of the Ayatori Job
# the execution's record on its batch Job, kept by the driver (``record.py``)
RECORD_ANNOTATION = f"{GROUP}/record"

WORK_DIR = "/work"
STEPS_DIR = "/steps"
STEP_STATE_DIR = "/steps/.run"  # in the pod: <NN>/{pid,log,exit} of each step started
OUTPUTS_DIR = "/outputs"
CONTAINER = "job"
KEEP_ALIVE = ["sleep", "2147483647"]  # the pod lives until the driver deletes the Job

_NOT_NAME = re.compile(r"[^a-z0-9-]+")


def _short_hash(text: str, size: int = 10) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:size]


def batch_job_name(job_name: str, execution_id: str) -> str:
    """``<name>-<10 hex of the execution id>``: deterministic, so a second create of the
    same execution is a 409, never a second batch Job; at most 52 characters (the Job
    controller adds 11 to its pods' names, and the name is a label value)."""
    stem = _NOT_NAME.sub("-", job_name.lower()).strip("-")[:41].strip("-") or "job"
    return f"{stem}-{_short_hash(execution_id)}"


def identity_label(job_name: str) -> str:
    """The Job name as a label value (<= 63 characters: longer names are hashed)."""
    if len(job_name) <= 63:
        return job_name
    return f"{job_name[:52].rstrip('-.')}-{_short_hash(job_name)}"


def labels(job_name: str, execution_id: str) -> dict[str, str]:
    return {
        MANAGED_BY_LABEL: MANAGED_BY,
        JOB_NAME_LABEL: identity_label(job_name),
        EXECUTION_LABEL: execution_id,
    }


def execution_selector(execution_id: str) -> str:
    """The batch Job of one execution (the Ayatori Job's UID)."""
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{EXECUTION_LABEL}={execution_id}"


def leftover_selector(job_name: str) -> str:
    """The batch Jobs of this Ayatori Job's identity (any execution) in its namespace."""
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{JOB_NAME_LABEL}={identity_label(job_name)}"


def _resources(effective: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    return {
        kind: {name: str(value) for name, value in (effective.get(kind) or {}).items()}
        for kind in ("requests", "limits")
        if effective.get(kind)
    }


def job_manifest(
    *,
    namespace: str,
    job_name: str,
    job_uid: str,
    image: str,
    parameters: Mapping[str, Any],
    effective_resources: Mapping[str, Any],
    env_names: list[str],
    working_dir: str = "",
    image_pull_secrets: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The batch/v1 Job of one execution (``KubernetesExecutionParameters`` applied)."""
    name = batch_job_name(job_name, job_uid)
    job_labels = labels(job_name, job_uid)
    secret = name if env_names else None
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": image,
        "command": list(KEEP_ALIVE),
        "workingDir": f"{WORK_DIR}/{working_dir}" if working_dir else WORK_DIR,
        "volumeMounts": [
            {"name": "work", "mountPath": WORK_DIR},
            {"name": "steps", "mountPath": STEPS_DIR},
            {"name": "outputs", "mountPath": OUTPUTS_DIR},
        ],
    }
    if parameters.get("imagePullPolicy"):
        container["imagePullPolicy"] = parameters["imagePullPolicy"]
    resources = _resources(effective_resources)
    if resources:
        container["resources"] = resources
    if secret:
        container["env"] = [
            {"name": var, "valueFrom": {"secretKeyRef": {"name": secret, "key": var}}}
            for var in env_names
        ]
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "containers": [container],
        "volumes": [{"name": v, "emptyDir": {}} for v in ("work", "steps", "outputs")],
    }
    if parameters.get("serviceAccountName"):
        pod_spec["serviceAccountName"] = parameters["serviceAccountName"]
        pod_spec.pop("automountServiceAccountToken")
    if parameters.get("runtimeClassName"):
        pod_spec["runtimeClassName"] = parameters["runtimeClassName"]
    scheduling = parameters.get("scheduling") or {}
    if scheduling.get("nodeSelector"):
        pod_spec["nodeSelector"] = dict(scheduling["nodeSelector"])
    if scheduling.get("tolerations"):
        pod_spec["tolerations"] = [dict(t) for t in scheduling["tolerations"]]
    if parameters.get("podSecurityContext"):
        pod_spec["securityContext"] = dict(parameters["podSecurityContext"])
    if image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s["name"]} for s in image_pull_secrets]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": job_labels,
            "annotations": {OWNER_ANNOTATION: f"{namespace}/{job_name} {job_uid}"},
        },
        "spec": {
            "backoffLimit": 0,
            "completions": 1,
            "parallelism": 1,
            "template": {"metadata": {"labels": dict(job_labels)}, "spec": pod_spec},
        },
    }


def env_secret(job: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The Secret the Job's pod reads its env from (None without env): same name, labels
    and owner annotation as the batch Job, deleted with it."""
    if not env:
        return None
    meta = job["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": dict(meta["labels"]),
            "annotations": dict(meta["annotations"]),
        },
        "stringData": dict(env),
    }
