"""RuntimePod as a read-only API kind (``kruntimes.io/v1alpha1`` ``runtimepods``): the rows
the providers keep (through ``pod_writer``, which records their changes), shown as the admin
shows them. Status is read from the row's columns
(phase, ready, heartbeat, capacity, the Runs bound to it), never from a stored copy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from portal.machinery.conditions import format_time, time_or_none
from portal.machinery.registry import ResourceKind
from portal.machinery.serializers import StrictSerializer

from .models import ACTIVE_PHASES, Run, RuntimePod


class RuntimePodSpecSerializer(StrictSerializer):
    runtime = serializers.CharField()
    provider = serializers.CharField()
    host = serializers.CharField(required=False)
    workspacePath = serializers.CharField(required=False)


class RuntimePodStatusSerializer(StrictSerializer):
    phase = serializers.ChoiceField(choices=["Pending", "Running", "Terminating"])
    ready = serializers.BooleanField()
    lastHeartbeat = serializers.CharField(required=False, allow_null=True)
    capacity = serializers.DictField(required=False)
    used = serializers.DictField(required=False)
    activeRuns = serializers.ListField(child=serializers.DictField(), required=False)
    pid = serializers.IntegerField(required=False, allow_null=True)


def bound_run_count(pod: RuntimePod) -> int:
    """Active Runs bound to this pod by name and UID (as the scheduler counts capacity);
    remembered on the row for the columns and the manifest of one response."""
    cached = getattr(pod, "_bound_run_count", None)
    if cached is None:
        cached = Run.objects.filter(
            namespace=pod.namespace,
            assigned_pod=pod.name,
            assigned_pod_uid=str(pod.uid),
            phase__in=ACTIVE_PHASES,
        ).count()
        pod._bound_run_count = cached  # type: ignore[attr-defined]
    return cached


def runs_cell(pod: RuntimePod) -> str:
    """``1/2``: active Runs bound / the pod's ``runs`` capacity (the admin's USED RUNS)."""
    capacity = pod.capacity.get("runs") if isinstance(pod.capacity, dict) else None
    used = bound_run_count(pod)
    return f"{used}/{capacity}" if isinstance(capacity, int) else str(used)


def runtime_pod_from_manifest(kind: ResourceKind, manifest: Mapping[str, Any]) -> RuntimePod:
    """The unsaved row a manifest shows (a watch event as a Table row): the columns it had."""
    metadata, spec = manifest.get("metadata") or {}, manifest.get("spec") or {}
    status = manifest.get("status") or {}
    pod = RuntimePod(
        namespace=metadata.get("namespace", ""),
        name=metadata.get("name", ""),
        runtime=spec.get("runtime", ""),
        provider=spec.get("provider", ""),
        phase=status.get("phase", ""),
        ready=bool(status.get("ready")),
        capacity=status.get("capacity") or {},
        labels=metadata.get("labels") or {},
        annotations=metadata.get("annotations") or {},
        resource_version=int(metadata.get("resourceVersion") or 0),
    )
    if metadata.get("uid"):
        pod.uid = metadata["uid"]
    if created := time_or_none(metadata.get("creationTimestamp")):
        pod.created = created
    pod._bound_run_count = int((status.get("used") or {}).get("runs") or 0)  # type: ignore[attr-defined]
    return pod


def runtime_pod_manifest(kind: ResourceKind, pod: RuntimePod) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": pod.name,
        "namespace": pod.namespace,
        "uid": str(pod.uid),
        "resourceVersion": str(pod.resource_version),
        "creationTimestamp": format_time(pod.created),
    }
    if pod.labels:
        metadata["labels"] = dict(pod.labels)
    if pod.annotations:
        metadata["annotations"] = dict(pod.annotations)
    spec: dict[str, Any] = {"runtime": pod.runtime, "provider": pod.provider}
    if pod.host:
        spec["host"] = pod.host
    if pod.workspace_path:
        spec["workspacePath"] = pod.workspace_path
    status: dict[str, Any] = {
        "phase": pod.phase,
        "ready": pod.ready,
        "lastHeartbeat": format_time(pod.last_heartbeat) if pod.last_heartbeat else None,
        "capacity": dict(pod.capacity) if isinstance(pod.capacity, dict) else {},
        "used": {"runs": bound_run_count(pod)},
        "activeRuns": [e for e in pod.active_runs or [] if isinstance(e, dict)],
    }
    if pod.pid is not None:
        status["pid"] = pod.pid
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }
