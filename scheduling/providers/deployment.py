"""The Deployment ``runtime-<name>`` a Runtime stands for, built from its spec (pure).

From ``spec.template``: the user's containers (``runtime`` first), each mounting the
``workspace`` volume, plus the ``runtimed`` container (``daemonImage`` or
``KRUNTIMES_RUNTIMED_IMAGE``) running the worker with its identity from the downward API. The
``workspace`` volume is ``spec.workspace`` (an inline VolumeSource; emptyDir when absent); a
filesystem artifact store's claim is mounted where runtimed looks for it, an S3 store's
credentials Secret where runtimed reads Secrets (the store's other settings travel with each
Run). The managed-by label marks the Deployments (and Pods) this provider may touch; the
desired-state hash annotation says whether a Deployment already matches its Runtime.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from scheduling import dataplane, resources

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "kruntimes-portal"
DEFAULT_PORT = 9091  # the Runtime Server's gRPC port when spec.port is unset
RUNTIME_LABEL = "runtime"
RUNTIME_UID_ANNOTATION = "kruntimes.io/runtime-uid"
HASH_ANNOTATION = "kruntimes.io/desired-hash"
PREFIX = "runtime-"
RUNTIMED_CONTAINER = "runtimed"
WORKSPACE_VOLUME = "workspace"
WORKSPACE_PATH = "/workspace"
ARTIFACT_VOLUME = "artifact-store"
ARTIFACT_VOLUMES_PATH = "/var/run/kruntimes/artifact-volumes"
CREDENTIALS_VOLUME = "artifact-store-credentials"
SECRETS_PATH = "/var/run/kruntimes/secrets"
RUNTIMED_COMMAND = ["python", "-m", "runtimed"]
# runtimed stops steps this long before the pod's grace ends, so its last reports get out
REPORT_MARGIN_SECONDS = 5


def deployment_name(runtime: str) -> str:
    return f"{PREFIX}{runtime}"


def pod_selector() -> str:
    """The label selector of every Pod (and Deployment) this provider keeps."""
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{RUNTIME_LABEL}"


@dataclass(frozen=True)
class RuntimedOptions:
    """What the runtimed container needs from the portal's settings."""

    image: str
    # the broker URL as a Secret key in the Runtime's namespace, or (no Secret) inline
    broker_secret: str = ""
    broker_secret_key: str = "CELERY_BROKER_URL"
    broker_url: str = ""
    termination_grace_seconds: int = 30
    extra_env: dict[str, str] = field(default_factory=dict)


def downward_env(prefix: str = "") -> list[dict[str, Any]]:
    fields = {"POD_NAME": "metadata.name", "POD_UID": "metadata.uid"}
    fields["POD_NAMESPACE"] = "metadata.namespace"
    return [
        {"name": f"{prefix}{name}", "valueFrom": {"fieldRef": {"fieldPath": path}}}
        for name, path in fields.items()
    ]


def broker_env(options: RuntimedOptions) -> dict[str, Any]:
    if options.broker_secret:
        ref = {"name": options.broker_secret, "key": options.broker_secret_key}
        return {"name": "CELERY_BROKER_URL", "valueFrom": {"secretKeyRef": ref}}
    return {"name": "CELERY_BROKER_URL", "value": options.broker_url}


def runtimed_env(
    name: str,
    spec: dict,
    template_annotations: dict,
    grace: int,
    options: RuntimedOptions,
    namespace: str,
) -> list[dict[str, Any]]:
    store = spec.get("artifactStore") or {}
    values = {
        "KRUNTIME_RUNTIME": name,
        "KRUNTIME_WORKSPACE": WORKSPACE_PATH,
        "KRUNTIME_CAPACITY": json.dumps(resources.pod_capacity(spec, template_annotations)),
        "KRUNTIME_TERMINATION_GRACE_SECONDS": str(max(1, grace - REPORT_MARGIN_SECONDS)),
        # the runtime container is the pod's Runtime Server (docs/runtime-server.md), on the
        # pod's loopback at spec.port, as in kruntimes
        "KRUNTIME_RUNTIME_SERVER_ADDRESS": f"127.0.0.1:{int(spec.get('port') or DEFAULT_PORT)}",
        **options.extra_env,
    }
    if store.get("driver") == "filesystem":
        values["KRUNTIME_ARTIFACT_VOLUMES"] = ARTIFACT_VOLUMES_PATH
    if credentials_secret(spec):
        values["KRUNTIME_SECRETS_DIR"] = SECRETS_PATH
    return [
        *downward_env(),
        *downward_env("KRUNTIME_"),  # what runtimed reads (runtimed.config)
        broker_env(options),
        *({"name": key, "value": value} for key, value in values.items()),
        *dataplane_env(namespace),
    ]


DATAPLANE_PORT = 9092


def dataplane_env(namespace: str) -> list[dict[str, Any]]:
    """The function dataplane (runtimed.dataplane) on the pod's IP, and the namespace's key
    the gateway shows it (``scheduling.dataplane``)."""
    key = {"name": "KRUNTIME_DATAPLANE_KEY", "value": dataplane.key(namespace)}
    return [
        {"name": "KRUNTIME_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        # Kubernetes expands $(VAR) from the variables listed before it
        {"name": "KRUNTIME_DATAPLANE_ADDRESS", "value": f"$(KRUNTIME_POD_IP):{DATAPLANE_PORT}"},
        key,
    ]


def credentials_secret(spec: dict) -> str:
    s3 = (spec.get("artifactStore") or {}).get("s3") or {}
    name = s3.get("credentialsSecretName")
    return name if (spec.get("artifactStore") or {}).get("driver") == "s3" and name else ""


def store_volumes(spec: dict) -> tuple[list[dict], list[dict]]:
    """(volumes, runtimed's mounts) for the artifact store."""
    store = spec.get("artifactStore") or {}
    claim = (store.get("filesystem") or {}).get("volumeClaimName")
    if store.get("driver") == "filesystem" and claim:
        volume = {"name": ARTIFACT_VOLUME, "persistentVolumeClaim": {"claimName": claim}}
        mount = {"name": ARTIFACT_VOLUME, "mountPath": f"{ARTIFACT_VOLUMES_PATH}/{claim}"}
        return [volume], [mount]
    secret = credentials_secret(spec)
    if secret:
        volume = {"name": CREDENTIALS_VOLUME, "secret": {"secretName": secret}}
        mount = {"name": CREDENTIALS_VOLUME, "mountPath": f"{SECRETS_PATH}/{secret}"}
        return [volume], [{**mount, "readOnly": True}]
    return [], []


def with_mount(container: dict, mount: dict) -> dict:
    """The container with ``mount`` replacing any mount of the same volume or path."""
    kept = [
        m
        for m in container.get("volumeMounts") or []
        if m.get("name") != mount["name"] and m.get("mountPath") != mount["mountPath"]
    ]
    return {**container, "volumeMounts": [*kept, mount]}


def workspace_volume(spec: dict) -> dict:
    source = spec.get("workspace") or {"emptyDir": {}}
    return {"name": WORKSPACE_VOLUME, **copy.deepcopy(source)}


def labels_for(name: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, RUNTIME_LABEL: name}


def pod_template(name: str, spec: dict, options: RuntimedOptions, namespace: str) -> dict:
    template = copy.deepcopy(spec.get("template") or {})
    metadata = template.get("metadata") or {}
    pod = template.get("spec") or {}
    grace = int(pod.get("terminationGracePeriodSeconds") or options.termination_grace_seconds)
    workspace_mount = {"name": WORKSPACE_VOLUME, "mountPath": WORKSPACE_PATH}
    volumes, store_mounts = store_volumes(spec)
    runtimed: dict[str, Any] = {
        "name": RUNTIMED_CONTAINER,
        "image": spec.get("daemonImage") or options.image,
        "command": list(RUNTIMED_COMMAND),
        "env": runtimed_env(
            name, spec, metadata.get("annotations") or {}, grace, options, namespace
        ),
        "volumeMounts": [workspace_mount, *store_mounts],
    }
    containers = [
        with_mount(c, workspace_mount)
        for c in pod.get("containers") or []
        if c.get("name") != RUNTIMED_CONTAINER
    ]
    ours = {WORKSPACE_VOLUME, ARTIFACT_VOLUME, CREDENTIALS_VOLUME}
    theirs = [v for v in pod.get("volumes") or [] if v.get("name") not in ours]
    pod.update(
        containers=[*containers, runtimed],
        volumes=[*theirs, workspace_volume(spec), *volumes],
        terminationGracePeriodSeconds=grace,
        restartPolicy="Always",
    )
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels_for(name)}
    return {"metadata": metadata, "spec": pod}


def digest(manifest: dict) -> str:
    canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def deployment_manifest(
    namespace: str, name: str, uid: str, spec: dict, options: RuntimedOptions
) -> dict:
    """The Deployment for Runtime ``namespace/name``, with the hash of itself annotated."""
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": deployment_name(name),
            "namespace": namespace,
            "labels": labels_for(name),
            "annotations": {RUNTIME_UID_ANNOTATION: uid},
        },
        "spec": {
            "replicas": int(spec.get("replicas") or 1),
            "selector": {"matchLabels": {RUNTIME_LABEL: name}},
            "template": pod_template(name, spec, options, namespace),
        },
    }
    manifest["metadata"]["annotations"][HASH_ANNOTATION] = digest(manifest)
    return manifest


def is_current(existing: dict, desired: dict) -> bool:
    """Whether a Deployment already is what its Runtime asks for (by the desired hash; replicas
    compared too, so a scale done by hand is put back)."""
    have = existing.get("metadata") or {}
    return (have.get("annotations") or {}).get(HASH_ANNOTATION) == desired["metadata"][
        "annotations"
    ][HASH_ANNOTATION] and (existing.get("spec") or {}).get("replicas") == desired["spec"][
        "replicas"
    ]
