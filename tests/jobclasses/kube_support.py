"""What the Kubernetes adapter's tests share: the emulator the adapter talks to over HTTP
(through the official client, nothing patched), objects put into it as an admin would, and
the controller run pass by pass."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from jobclasses.models import Job
from portal.kube import api_client
from tests.helpers.jobclasses import create, job_manifest, reconcile_job
from tests.helpers.kube import EmulatorServer

IMAGE = "busybox:1.36"


@pytest.fixture
def kube(settings, tmp_path):
    """The emulator, with the adapter pointed at it (no dry run; pods are never Ready)."""
    settings.DATA_DIR = tmp_path
    settings.KRUNTIMES_KUBERNETES_DRY_RUN = False
    settings.KRUNTIMES_KUBERNETES_REQUEST_TIMEOUT_SECONDS = 5.0
    settings.KRUNTIMES_KUBERNETES_POD_READY_TIMEOUT_SECONDS = 1.0
    from tests.helpers.kube_pods import RecordingEmulator

    with EmulatorServer(RecordingEmulator()) as server:
        server.never_ready("default")
        settings.KRUNTIMES_KUBERNETES_HOST = server.url
        yield server


def core(server) -> client.CoreV1Api:
    return client.CoreV1Api(api_client(host=server.url))


def batch(server) -> client.BatchV1Api:
    return client.BatchV1Api(api_client(host=server.url))


def add_runtime_class(server, name: str) -> None:
    client.NodeV1Api(api_client(host=server.url)).create_runtime_class(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": name,
        },
        _request_timeout=5,
    )


def add_service_account(server, namespace: str, name: str) -> None:
    core(server).create_namespaced_service_account(
        namespace,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        _request_timeout=5,
    )


def batch_jobs(server, namespace: str = "default") -> list[dict]:
    found = batch(server).list_namespaced_job(namespace, _request_timeout=5)
    return [api_client(host=server.url).sanitize_for_serialization(j) for j in found.items]


def requests_seen(server) -> int:
    return len(server.emulator.calls)


def submit(name: str = "job", **spec) -> Job:
    spec.setdefault("image", IMAGE)
    return reconcile_job(create(job_manifest(name, **spec), namespace="default"))


def run_until(job: Job, phases, timeout: float = 20.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        job = reconcile_job(job)
        if job is None or job.phase in phases:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"{job} stayed {job.phase}: {job.status}")
        time.sleep(0.1)


@pytest.fixture
def pods(settings, tmp_path):
    """The emulator: batch Jobs get a pod, Ready at once, that takes exec."""
    from tests.helpers.kube_pods import RecordingEmulator

    settings.DATA_DIR = tmp_path / "data"
    settings.KRUNTIMES_KUBERNETES_DRY_RUN = False
    settings.KRUNTIMES_KUBERNETES_REQUEST_TIMEOUT_SECONDS = 5.0
    settings.KRUNTIMES_KUBERNETES_POD_READY_TIMEOUT_SECONDS = 10.0
    with EmulatorServer(RecordingEmulator(pods_dir=tmp_path / "pods")) as server:
        settings.KRUNTIMES_KUBERNETES_HOST = server.url
        yield server


def job_creations(server) -> int:
    """Creates of batch Jobs the server was sent, over the whole test."""
    return len(server.emulator.posted("jobs"))
