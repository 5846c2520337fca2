"""Hand-built snapshots for plugin tests: no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduling.scheduler.snapshot import PendingRun, PlacedRun, PodState, Snapshot

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOPOLOGY = "kruntimes.io/runtime-pod"


def pod(
    name: str,
    *,
    runs: int = 2,
    used: int = 0,
    ready: bool = True,
    phase: str = "Running",
    heartbeat_age: float = 1.0,
    runtime: str = "bash",
    namespace: str = "default",
    capacity: dict | None = None,
    pk: int = 0,
) -> PodState:
    return PodState(
        namespace=namespace,
        runtime=runtime,
        name=name,
        uid=f"uid-{name}",
        pk=pk or abs(hash(name)) % 10_000,
        ready=ready,
        phase=phase,
        last_heartbeat=None if heartbeat_age is None else NOW - timedelta(seconds=heartbeat_age),
        capacity=capacity if capacity is not None else {"runs": runs},
        used={"runs": used},
    )


def run(
    name: str = "r",
    *,
    labels: dict | None = None,
    requests: dict | None = None,
    affinity: dict | None = None,
    fractional: list | None = None,
    namespace: str = "default",
    runtime: str = "bash",
    workspace: str = "",
) -> PendingRun:
    return PendingRun(
        pk=abs(hash(name)) % 10_000,
        uid=f"uid-{name}",
        namespace=namespace,
        name=name,
        resource_version=1,
        generation=1,
        labels=labels or {},
        runtime=runtime,
        requests=requests or {"runs": 1},
        fractional=fractional or [],
        affinity=affinity or {},
        status={},
        cancel_requested=False,
        creation_timestamp=NOW,
        workspace=workspace,
    )


def placed(
    pod_name: str, labels: dict, uid: str = "", namespace: str = "default", assumed: bool = False
) -> tuple[str, PlacedRun]:
    return namespace, PlacedRun(
        uid or f"placed-{pod_name}-{sorted(labels.items())}", labels, pod_name, assumed
    )


def snapshot(
    pods: list[PodState], *placements: tuple[str, PlacedRun], workspaces: dict | None = None
) -> Snapshot:
    by_namespace: dict[str, list[PlacedRun]] = {}
    for namespace, placement in placements:
        by_namespace.setdefault(namespace, []).append(placement)
    return Snapshot(NOW, pods, by_namespace, workspaces=workspaces or {})


def term(match_labels: dict) -> dict:
    return {"labelSelector": {"matchLabels": match_labels}, "topologyKey": TOPOLOGY}


def required(kind: str, *match_labels: dict) -> dict:
    return {
        kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term(m) for m in match_labels]}
    }


def preferred(kind: str, *weighted: tuple[int, dict]) -> dict:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "runAffinityTerm": term(m)} for w, m in weighted
            ]
        }
    }
