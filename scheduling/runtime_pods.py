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
    """RuntimePodSpec says which Runtime a Runtime Pod belongs to and how it runs; set by the
    server from its provider's record (the kind is read-only)."""

    runtime = serializers.CharField(help_text="The Runtime this Pod belongs to.")
    provider = serializers.CharField(
        help_text="The provider that runs the Pod (such as local processes or Kubernetes)."
    )
    host = serializers.CharField(
        help_text="The host the Pod's runtime daemon runs on.", required=False
    )
    workspacePath = serializers.CharField(
        help_text="The directory the Pod's workspace is at.", required=False
    )


class RuntimePodStatusSerializer(StrictSerializer):
    """RuntimePodStatus is the observed state of a Runtime Pod, set by the server."""

    phase = serializers.ChoiceField(
        help_text="Pending, Running or Terminating, as the provider reports it.",
        choices=["Pending", "Running", "Terminating"],
    )
    ready = serializers.BooleanField(
        help_text="Whether the Pod's runtime daemon answers and takes Runs."
    )
    lastHeartbeat = serializers.CharField(
        help_text="When the runtime daemon last reported in.", required=False, allow_null=True
    )
    capacity = serializers.DictField(
        help_text="What the Pod offers Runs, by resource name (runs, cpu ...).", required=False
    )
    used = serializers.DictField(
        help_text=(
            "What the Runs bound to the Pod take; runs counts the active Runs bound to it by "
            "name and uid."
        ),
        required=False,
    )
    activeRuns = serializers.ListField(
        help_text="The Runs the runtime daemon reports running.",
        child=serializers.DictField(),
        required=False,
    )
    pid = serializers.IntegerField(
        help_text="The process id of the runtime daemon, for Pods run as local processes.",
        required=False,
        allow_null=True,
    )


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
