"""Runtimes, Runtime Pods and Runs in the database, created the way users and providers do."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone

from portal.machinery import store
from portal.machinery.registry import registry
from scheduling import pod_writer
from scheduling.models import Run, RuntimePod
from tests.helpers.operator import OPERATOR

RUNS = registry.get("kruntimes.io", "v1alpha1", "runs")
RUNTIMES = registry.get("kruntimes.io", "v1alpha1", "runtimes")


def make_runtime(name: str = "bash", namespace: str = "default", **spec) -> None:
    store.create(
        RUNTIMES,
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Runtime",
            "metadata": {"name": name},
            "spec": {
                "template": {"spec": {"containers": [{"name": "runtime", "image": "bash:5"}]}},
                **spec,
            },
        },
        namespace=namespace,
        context=OPERATOR,
    )


def make_pod(
    name: str,
    *,
    runtime: str = "bash",
    namespace: str = "default",
    runs: int = 2,
    ready: bool = True,
    heartbeat_age: float = 1.0,
    **capacity,
) -> RuntimePod:
    return pod_writer.create(
        namespace=namespace,
        runtime=runtime,
        name=name,
        uid=uuid.uuid4(),
        ready=ready,
        phase="Running",
        capacity={"runs": runs, **capacity},
        last_heartbeat=timezone.now() - timedelta(seconds=heartbeat_age),
    )


def make_run(
    name: str,
    *,
    runtime: str = "bash",
    namespace: str = "default",
    labels: dict | None = None,
    annotations: dict | None = None,
    owner_references: list | None = None,
    **spec,
) -> Run:
    metadata = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    if owner_references:
        metadata["ownerReferences"] = owner_references
    return store.create(
        RUNS,
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Run",
            "metadata": metadata,
            "spec": {
                "runtime": runtime,
                "source": {"inline": "echo hi"},
                "mode": {"task": {}},
                **spec,
            },
        },
        namespace=namespace,
        context=OPERATOR,
    )


def fresh(run: Run) -> Run:
    return Run.objects.get(pk=run.pk)


def term(labels: dict) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": "kruntimes.io/runtime-pod"}


def required(kind: str, labels: dict) -> dict:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term(labels)]}}


def append_log(run: Run, offset: int, text: str, attempt: int | None = None) -> None:
    """Store one log chunk of the Run as runtimed would have shipped it."""
    from scheduling import logs

    assert logs.append_chunk(
        {
            "namespace": run.namespace,
            "name": run.name,
            "uid": str(run.uid),
            "attempt": attempt or run.attempt,
            "podUID": "p",
            "offset": offset,
            "size": len(text.encode()),
            "text": text,
        },
        timezone.now(),
    )


def report(run, pod, phase, **extra):
    return {
        "namespace": run.namespace,
        "name": run.name,
        "uid": str(run.uid),
        "attempt": run.attempt,
        "podName": pod.name,
        "podUID": str(pod.uid),
        "phase": phase,
        "reason": "",
        "message": "",
        "exitCode": None,
        "startTime": None,
        "completionTime": None,
        **extra,
    }


class RecordingApp:
    def __init__(self, fail: bool = False):
        self.sent, self.fail = [], fail

    def send_task(self, name, kwargs, queue):
        if self.fail:
            raise ConnectionError("broker down")
        self.sent.append((name, kwargs, queue))
