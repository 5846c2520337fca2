"""The kinds the scheduling app serves: kruntimes.io/v1alpha1 Runtime and Run."""

from __future__ import annotations

from typing import Any

from portal.machinery.registry import IN_ALL, Column, ResourceKind, registry
from portal.machinery.status_strategy import StatusStrategy, final_phases

GROUP = "kruntimes.io"
VERSION = "v1alpha1"


def runtime_image(runtime: Any) -> str:
    """The first (``runtime``) container's image of a Runtime's Pod template."""
    template = (runtime.spec or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or [{}]
    first = containers[0] if isinstance(containers[0], dict) else {}
    return first.get("image", "")


def _status(obj: Any, field: str) -> str:
    return (obj.status or {}).get(field, "") or ""


def register_scheduling_kinds() -> None:
    from .artifact_access import check_artifact_inputs
    from .cleanup import ARTIFACT_CLEANUP, function_finalizers
    from .models import TERMINAL_PHASES, Run, Runtime
    from .run_events import on_run_change as record_phase_event
    from .serializers import (
        RunSpecSerializer,
        RunStatusSerializer,
        RuntimeSpecSerializer,
        RuntimeStatusSerializer,
    )
    from .triggers import on_run_change, on_runtime_change
    from .validators import RUN_VALIDATORS, RUNTIME_VALIDATORS

    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="Runtime",
            plural="runtimes",
            description=(
                "Runtime is a pool of Runtime Pods (from a Pod template) that run Runs: their "
                "capacity, artifact store and workspace."
            ),
            model=Runtime,
            categories=IN_ALL,
            short_names=("rt",),
            body={"spec": RuntimeSpecSerializer, "status": RuntimeStatusSerializer},
            validators=RUNTIME_VALIDATORS,
            on_change=(on_runtime_change,),
            columns=(
                Column("REPLICAS", lambda o: o.replicas),
                Column("READY", lambda o: o.ready_replicas),
                Column("IMAGE", runtime_image, wide=True),
            ),
        )
    )
    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="Run",
            plural="runs",
            description=(
                "Run is one execution of code on a Runtime: a task run once or a function "
                "served, scheduled onto one of the Runtime's Pods."
            ),
            model=Run,
            categories=IN_ALL,
            short_names=("rn",),
            # a finished Run is never run again, whoever writes its status
            status=StatusStrategy(rules=(final_phases("Run", *TERMINAL_PHASES),)),
            body={"spec": RunSpecSerializer, "status": RunStatusSerializer},
            validators=RUN_VALIDATORS,
            default_finalizers=(ARTIFACT_CLEANUP,),
            finalizers_for=function_finalizers,
            admission=(check_artifact_inputs,),
            subresources={"log": ("get",), "artifacts": ("get",)},
            # a function Run's invocations, served by the function gateway (scheduling.gateway)
            authorized_subresources={"invoke": ("create",)},
            on_change=(on_run_change, record_phase_event),
            columns=(
                Column("PHASE", lambda o: o.phase, description="status.phase"),
                Column("RUNTIME", lambda o: o.runtime, description="spec.runtime"),
                Column("POD", lambda o: o.assigned_pod, description="status.assignedPod"),
                Column("REASON", lambda o: _status(o, "reason"), description="status.reason"),
                Column("ATTEMPT", lambda o: o.attempt, wide=True, description="status.attempt"),
                Column(
                    "MESSAGE",
                    lambda o: _status(o, "message"),
                    wide=True,
                    description="status.message",
                ),
            ),
        )
    )
    register_runtime_pods()


def register_runtime_pods() -> None:
    from .models import RuntimePod
    from .runtime_pods import (
        RuntimePodSpecSerializer,
        RuntimePodStatusSerializer,
        runs_cell,
        runtime_pod_from_manifest,
        runtime_pod_manifest,
    )
    from .triggers import on_pod_change

    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="RuntimePod",
            plural="runtimepods",
            description=(
                "RuntimePod is one Pod of a Runtime as its provider reports it (a local process"
                " or a Kubernetes Pod); read-only."
            ),
            model=RuntimePod,
            categories=IN_ALL,
            short_names=("rp",),
            body={"spec": RuntimePodSpecSerializer, "status": RuntimePodStatusSerializer},
            read_only=True,
            status=None,
            generation_fields=(),
            to_manifest=runtime_pod_manifest,
            from_manifest=runtime_pod_from_manifest,
            created_attr="created",
            on_change=(on_pod_change,),
            columns=(
                Column("RUNTIME", lambda o: o.runtime, description="spec.runtime"),
                Column("PHASE", lambda o: o.phase, description="status.phase"),
                Column("READY", lambda o: o.ready, description="status.ready"),
                Column("RUNS", runs_cell, description="active Runs bound / runs capacity"),
            ),
        )
    )
