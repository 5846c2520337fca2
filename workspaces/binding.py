"""The RuntimePodLocal binding controller (seed 002, binding lifecycle rules 1-5).

Level-triggered: ``reconcile`` looks at one workspace and the Runtime Pods of its namespace as
they are now and writes the status they call for (through ``workspaces.status``); a workspace,
pod or Runtime change runs it at once, and the beat pass runs it for every live workspace.

1. An unbound workspace waits while its Runtime has no ready pod; it reserves no capacity.
2. Otherwise the ready pods sorted by name, one picked by a stable hash of the workspace UID.
3. Bound records phase, runtime, boundPod, boundPodUID and path; no directory is made here
   (runtimed makes it when the first Run using it starts).
4. Bound stays Bound while the pod exists, ready or not (the PodReady condition says which).
5. The pod deleted, gone, or its name now carried by another UID: Lost, never rebound.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from scheduling.models import PodPhase, Runtime, RuntimePod

from . import status as workspace_status
from .models import PersistentWorkspace, WorkspacePhase


@dataclass(frozen=True)
class Pod:
    name: str
    uid: str
    ready: bool


def pick(workspace_uid: str, ready: Sequence[Pod]) -> Pod:
    """Rule 2: sort by name, then a stable hash of the workspace UID picks one (the same pod
    for the same candidates, spread across pods for many workspaces)."""
    ordered = sorted(ready, key=lambda pod: pod.name)
    digest = hashlib.sha256(workspace_uid.encode()).digest()
    return ordered[int.from_bytes(digest[:8], "big") % len(ordered)]


def desired(
    ws: PersistentWorkspace,
    pods: Iterable[Pod],
    runtime_exists: bool,
    now: datetime,
    runtime_deleting: bool = False,
) -> dict:
    """The status the workspace should have, given its Runtime's pods as they are now (the
    pods of a Runtime being deleted still hold what is bound there, but take nothing new)."""
    current = ws.status or {}
    pods = list(pods)
    if ws.phase == WorkspacePhase.LOST:
        return current  # terminal: recovery is a new workspace
    if ws.phase in (WorkspacePhase.BOUND, WorkspacePhase.RELEASED):
        by_name = {pod.name: pod for pod in pods}
        pod = by_name.get(ws.bound_pod)
        if pod is None:
            return workspace_status.lost(
                current,
                "RuntimePodGone",
                f"Runtime Pod {ws.bound_pod} no longer exists: its workspace data is gone; "
                "create a new PersistentWorkspace",
                now,
                ws.generation,
            )
        if pod.uid != ws.bound_pod_uid:
            return workspace_status.lost(
                current,
                "RuntimePodReplaced",
                f"Runtime Pod {ws.bound_pod} now has uid {pod.uid}, not the bound "
                f"{ws.bound_pod_uid}: its workspace data is gone; create a new PersistentWorkspace",
                now,
                ws.generation,
            )
        return workspace_status.pod_readiness(current, pod.ready, now, ws.generation)
    # Pending (rule 1, 2)
    if ws.deletion_timestamp is not None:
        return current  # being deleted before it ever held data: nothing to bind
    ready = [pod for pod in pods if pod.ready and not runtime_deleting]
    if ready:
        chosen = pick(str(ws.uid), ready)
        return workspace_status.bound(current, ws, chosen.name, chosen.uid, now)
    if not runtime_exists:
        reason = "RuntimeNotFound"
        message = f'Runtime "{ws.runtime}" not found in namespace "{ws.namespace}"'
    elif runtime_deleting:
        reason = "RuntimeTerminating"
        message = f'Runtime "{ws.runtime}" is being deleted: nothing new binds to its pods'
    else:
        reason = "WaitingForRuntimePod"
        message = f'waiting for a ready Runtime Pod of Runtime "{ws.runtime}"'
    return workspace_status.waiting(current, ws.runtime, reason, message, now, ws.generation)


def _pods(namespace: str, runtime: str | None = None) -> dict[str, list[Pod]]:
    """Runtime name -> its pods in the namespace (ready: Running, ready, not terminating)."""
    rows = RuntimePod.objects.filter(namespace=namespace)
    if runtime is not None:
        rows = rows.filter(runtime=runtime)
    found: dict[str, list[Pod]] = {}
    for row in rows.values("runtime", "name", "uid", "ready", "phase"):
        ready = bool(row["ready"]) and row["phase"] == PodPhase.RUNNING
        found.setdefault(row["runtime"], []).append(Pod(row["name"], str(row["uid"]), ready))
    return found


def reconcile(ws: PersistentWorkspace, now: datetime, pods: list[Pod] | None = None) -> bool:
    """Write the workspace's desired status; returns whether it changed."""
    if pods is None:
        pods = _pods(ws.namespace, ws.runtime).get(ws.runtime, [])
    runtime = Runtime.objects.filter(namespace=ws.namespace, name=ws.runtime).first()
    exists, deleting = (
        bool(pods) or runtime is not None,
        bool(runtime and runtime.deletion_timestamp),
    )
    return workspace_status.write(ws, desired(ws, pods, exists, now, deleting))


def reconcile_namespace(namespace: str, now: datetime) -> int:
    """Every workspace of a namespace against one read of its pods; returns writes."""
    pods = _pods(namespace)
    runtimes = dict(
        Runtime.objects.filter(namespace=namespace).values_list("name", "deletion_timestamp")
    )
    writes = 0
    for ws in PersistentWorkspace.objects.filter(namespace=namespace).exclude(
        phase=WorkspacePhase.LOST
    ):
        mine = pods.get(ws.runtime, [])
        exists, deleting = ws.runtime in runtimes, runtimes.get(ws.runtime) is not None
        writes += workspace_status.write(ws, desired(ws, mine, bool(mine) or exists, now, deleting))
    return writes
