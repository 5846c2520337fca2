"""The state one scheduling cycle works on, taken once per pass and updated by Assume.

Pods are grouped by (namespace, runtime); placed Runs (actual: bound and active; assumed:
reserved in this pass, not yet bound) feed capacity and Run affinity. Affinity targets are
counted per (namespace, selector) and kept current as Runs are assumed or released.

A snapshot read from the database leaves actual Runs' labels to a ``PlacedSource``, asked only
for the namespaces and selectors a pass needs (see ``loading``); a hand-built one holds them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from portal.machinery.labels import Selector
from scheduling import resources

from .pod_order import PodOrder
from .pod_state import PodState
from .targets import PlacedRun, Targets

__all__ = [
    "HEARTBEAT_TIMEOUT",
    "PendingRun",
    "PodIndex",
    "PlacedRun",
    "PlacedSource",
    "PodState",
    "Snapshot",
    "WorkspaceSource",
    "WorkspaceState",
]


# a pod not heard from for longer is stale (the availability Filter); see ``Snapshot.stale``
HEARTBEAT_TIMEOUT = timedelta(seconds=15)


@dataclass
class PendingRun:
    pk: int
    uid: str
    namespace: str
    name: str
    resource_version: int
    generation: int
    labels: dict[str, str]
    runtime: str
    requests: dict[str, int]
    fractional: list[str]
    affinity: dict[str, Any]  # spec.affinity
    status: dict[str, Any]
    cancel_requested: bool
    priority: int = 0
    creation_timestamp: datetime | None = None
    workspace: str = ""  # spec.workspace.name: the PersistentWorkspace it must run in


@dataclass(frozen=True)
class WorkspaceState:
    """What the scheduler fences on: a PersistentWorkspace's runtime, phase and bound pod."""

    runtime: str
    phase: str
    bound_pod: str = ""
    bound_pod_uid: str = ""
    deleting: bool = False


WorkspaceKey = tuple[str, str]  # (namespace, name)


class WorkspaceSource(Protocol):
    """PersistentWorkspaces as the database has them: one read for many keys."""

    def workspaces(self, keys: set[WorkspaceKey]) -> dict[WorkspaceKey, WorkspaceState]: ...


class PlacedSource(Protocol):
    """Actual Runs as the database has them now (including Runs this pass has bound)."""

    def placed(self, namespace: str) -> list[PlacedRun]: ...

    def targets(self, namespace: str, selector: Selector) -> Counter[str] | None:
        """Pod name -> matching actual Runs, or None when reading the namespace is cheaper."""


class PodIndex:
    """Pods by (namespace, name), and each (namespace, runtime)'s pods least loaded first
    (see pod_order); kept across passes by the pod cache, built anew for a hand-made
    snapshot."""

    def __init__(self, pods: list[PodState]) -> None:
        self.by_key = {pod.key: pod for pod in pods}
        grouped: dict[tuple[str, str], list[PodState]] = {}
        for pod in pods:
            grouped.setdefault((pod.namespace, pod.runtime), []).append(pod)
        self.by_runtime = {key: PodOrder(group) for key, group in grouped.items()}

    def reorder(self, pod: PodState) -> None:
        """The pod's usage or readiness changed: move it to its place in the order."""
        order = self.by_runtime.get((pod.namespace, pod.runtime))
        if order is not None:
            order.update(pod)

    def add(self, pod: PodState) -> None:
        self.by_key[pod.key] = pod
        order = self.by_runtime.get((pod.namespace, pod.runtime))
        if order is None:
            self.by_runtime[pod.namespace, pod.runtime] = PodOrder([pod])
        else:
            order.add(pod)

    def remove(self, pod: PodState) -> None:
        del self.by_key[pod.key]
        group = (pod.namespace, pod.runtime)
        order = self.by_runtime[group]
        order.remove(pod)
        if not len(order):
            del self.by_runtime[group]


class Snapshot:
    def __init__(
        self,
        now: datetime,
        pods: list[PodState],
        placed: dict[str, list[PlacedRun]],
        source: PlacedSource | None = None,
        runtimes: set[tuple[str, str]] | Callable[[], set[tuple[str, str]]] | None = None,
        workspaces: WorkspaceSource | dict[WorkspaceKey, WorkspaceState] | None = None,
        index: PodIndex | None = None,
        stale: frozenset[int] | None = None,
    ) -> None:
        """``index``: the pods, kept by a pod cache (``pods`` is then not read); ``stale``:
        the pks of the pods whose heartbeat is stale at ``now`` as the database says (None:
        each pod's ``last_heartbeat`` says); ``runtimes``: the (namespace, name) of every
        Runtime, or how to read them when first needed (None: each is taken to exist)."""
        self.now = now
        self._stale = stale
        # the pks of the pods this snapshot changed (Assume, release, exclusion, resync)
        self.touched: set[int] = set()
        # what the pods offer, for parking (see ``parking``); None: not computed
        self.pod_signature: Any = None
        # Each referenced workspace is read once per pass (None: it does not exist).
        self._workspace_source = None if isinstance(workspaces, dict) else workspaces
        self._workspaces: dict[WorkspaceKey, WorkspaceState | None] = (
            dict(workspaces) if isinstance(workspaces, dict) else {}
        )
        # (namespace, name) of every Runtime; None: not known, every Runtime is taken to exist
        self.runtimes = runtimes
        self.index = index if index is not None else PodIndex(pods)
        self.pods_by_key = self.index.by_key
        # each (namespace, runtime)'s pods, least loaded first (see pod_order)
        self.by_runtime = self.index.by_runtime
        self._source = source
        self._spaces = {namespace: Targets(runs) for namespace, runs in placed.items()}
        # Namespaces whose actual Runs the source has not been asked for yet -> uids of the
        # assumed Runs bound since (the source counts those: the assumption must not, too).
        self._unread: dict[str, set[str]] = {}

    def candidates(self, run: PendingRun) -> list[PodState]:
        """The Run's Runtime's pods in this namespace, least loaded first."""
        order = self._order(run)
        return order.pods if order is not None else []

    def candidates_named(self, run: PendingRun, names: set[str]) -> list[PodState]:
        """Those of the Run's candidates named, in the same order."""
        order = self._order(run)
        return order.named(names) if order is not None else []

    def shared_capacity(self, run: PendingRun) -> dict[str, int] | None:
        """The capacity every candidate of the Run advertises, each resource above zero;
        None when they differ (or there are none)."""
        order = self._order(run)
        return order.shared_capacity if order is not None else None

    def _order(self, run: PendingRun) -> PodOrder | None:
        return self.by_runtime.get((run.namespace, run.runtime))

    def stale(self, pod: PodState) -> bool:
        """Whether the pod's runtimed has not been heard from within HEARTBEAT_TIMEOUT."""
        if self._stale is not None:
            return pod.pk in self._stale
        return pod.last_heartbeat is None or self.now - pod.last_heartbeat > HEARTBEAT_TIMEOUT

    def reorder(self, pod: PodState) -> None:
        """The pod's usage or readiness changed: move it to its place in the order."""
        self.touched.add(pod.pk)
        self.index.reorder(pod)

    def set_used(self, pod: PodState, used: dict[str, int]) -> None:
        pod.used = dict(used)
        self.reorder(pod)

    def load_workspaces(self, runs: list[PendingRun]) -> None:
        """Read, in one go, the workspaces these Runs reference that this pass has not read."""
        wanted = {(run.namespace, run.workspace) for run in runs if run.workspace}
        wanted -= self._workspaces.keys()
        if not wanted or self._workspace_source is None:
            return
        found = self._workspace_source.workspaces(wanted)
        for key in wanted:
            self._workspaces[key] = found.get(key)

    def workspace(self, namespace: str, name: str) -> WorkspaceState | None:
        key = (namespace, name)
        if key not in self._workspaces and self._workspace_source is not None:
            self._workspaces[key] = self._workspace_source.workspaces({key}).get(key)
        return self._workspaces.get(key)

    def runtime_exists(self, namespace: str, name: str) -> bool:
        if callable(self.runtimes):
            self.runtimes = self.runtimes()
        return self.runtimes is None or (namespace, name) in self.runtimes

    def targets(self, namespace: str, selector: Selector) -> Counter[str]:
        """Pod name -> how many actual or assumed Runs in the namespace match the selector."""
        space = self._space(namespace)
        found = space.counter(selector)
        if found is None:
            found = self._count(namespace, space, selector)
            space.watch(selector, found)
        return found

    def assume(self, run: PendingRun, pod: PodState) -> None:
        """Reserve: count the Run on the pod before it is bound."""
        resources.add(pod.used, run.requests)
        self.reorder(pod)
        self._space(run.namespace).add(PlacedRun(run.uid, run.labels, pod.name, assumed=True))

    def finish_binding(self, run: PendingRun) -> None:
        """The assumed Run is bound: from now on the database has it too."""
        if run.namespace in self._unread:
            self._unread[run.namespace].add(run.uid)

    def forget(self, run: PendingRun, pod: PodState) -> None:
        """Release an assumption whose bind lost a race."""
        resources.add(pod.used, run.requests, sign=-1)
        self.reorder(pod)
        self._space(run.namespace).remove(run.uid, run.labels, pod.name)

    def exclude(self, pod: PodState) -> None:
        """Stop offering a pod for the rest of this pass (its bind showed the snapshot stale)."""
        pod.ready = False
        self.reorder(pod)

    def _space(self, namespace: str) -> Targets:
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = Targets([])
            if self._source is not None:
                self._unread[namespace] = set()
        return space

    def _count(self, namespace: str, space: Targets, selector: Selector) -> Counter[str]:
        bound = self._unread.get(namespace)
        if bound is None:  # every placed Run is in memory
            return space.count(selector)
        assert self._source is not None  # a namespace is unread only when there is a source
        found = self._source.targets(namespace, selector)
        if found is not None:  # plus what only this pass knows: assumed, not yet bound
            found.update(space.count(selector, skip=bound))
            return found
        space.replace(
            self._source.placed(namespace)
            + [placed for placed in space.placed if placed.uid not in bound]
        )
        del self._unread[namespace]
        return space.count(selector)
