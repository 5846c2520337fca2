"""Runtime status from its pods: ``readyReplicas`` and an ``Available`` condition."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Q

from portal.machinery import history
from portal.machinery.conditions import set_condition
from scheduling.models import Runtime, RuntimePod


def desired_status(runtime: Runtime, ready: int, now: datetime) -> dict:
    status = dict(runtime.status or {})
    available = ready > 0
    status["readyReplicas"] = ready
    status["observedGeneration"] = runtime.generation
    status["conditions"] = set_condition(
        status.get("conditions"),
        type="Available",
        status="True" if available else "False",
        reason="RuntimePodsReady" if available else "NoReadyRuntimePods",
        message=f"{ready}/{runtime.replicas} Runtime Pods ready",
        observed_generation=runtime.generation,
        now=now,
    )
    return status


def sync_runtime_status(
    now: datetime, namespace: str | None = None, name: str | None = None
) -> int:
    """Write each Runtime's status where it changed (compare-and-set); returns writes."""
    runtimes = Runtime.objects.filter(deletion_timestamp__isnull=True)
    pods = RuntimePod.objects.all()
    if namespace is not None:
        runtimes, pods = runtimes.filter(namespace=namespace), pods.filter(namespace=namespace)
    if name is not None:
        runtimes, pods = runtimes.filter(name=name), pods.filter(runtime=name)
    ready = {
        (row["namespace"], row["runtime"]): row["ready"]
        for row in pods.values("namespace", "runtime").annotate(
            ready=Count("pk", filter=Q(ready=True))
        )
    }
    writes = 0
    for runtime in runtimes:
        count = ready.get((runtime.namespace, runtime.name), 0)
        current = runtime.status or {}
        if (
            current.get("readyReplicas") == count
            and current.get("observedGeneration") == runtime.generation
            and current.get("conditions")
        ):
            continue
        status = desired_status(runtime, count, now)
        writes += history.compare_and_set(runtime, {"status": status, "ready_replicas": count})
    return writes
