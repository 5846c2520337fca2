"""The state one scheduling cycle works on, taken once per pass and updated by Assume.

Pods are grouped by (namespace, runtime); placed Runs (actual: bound and active; assumed:
reserved in this pass, not yet bound) feed capacity and Run affinity. Affinity targets are
indexed per (namespace, selector) and kept current as Runs are assumed or released.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from portal.machinery.labels import Selector
from scheduling import resources


@dataclass
class PodState:
    namespace: str
    runtime: str
    name: str
    uid: str
    pk: int
    ready: bool
    phase: str
    last_heartbeat: datetime | None
    capacity: dict[str, int]
    used: dict[str, int] = field(default_factory=dict)  # actual + assumed requests

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name


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
    affinity: dict
    status: dict
    cancel_requested: bool
    priority: int = 0
    creation_timestamp: datetime | None = None


@dataclass(frozen=True)
class PlacedRun:
    uid: str
    labels: dict[str, str] = field(hash=False, compare=False)
    pod_name: str = ""
    assumed: bool = False


class Snapshot:
    def __init__(self, now: datetime, pods: list[PodState],
                 placed: dict[str, list[PlacedRun]]) -> None:
        self.now = now
        self.pods_by_key = {pod.key: pod for pod in pods}
        self.by_runtime: dict[tuple[str, str], list[PodState]] = {}
        for pod in sorted(pods, key=lambda p: p.name):
            self.by_runtime.setdefault((pod.namespace, pod.runtime), []).append(pod)
        self.placed = placed  # namespace -> Runs that are actual or assumed targets
        self._targets: dict[tuple[str, Selector], Counter] = {}

    def candidates(self, run: PendingRun) -> list[PodState]:
        return self.by_runtime.get((run.namespace, run.runtime), [])

    def targets(self, namespace: str, selector: Selector) -> Counter:
        """Pod name -> how many actual or assumed Runs in the namespace match the selector."""
        key = (namespace, selector)
        found = self._targets.get(key)
        if found is None:
            found = Counter(p.pod_name for p in self.placed.get(namespace, ())
                            if selector.matches(p.labels))
            self._targets[key] = found
        return found

    def assume(self, run: PendingRun, pod: PodState) -> None:
        """Reserve: count the Run on the pod before it is bound."""
        resources.add(pod.used, run.requests)
        self.placed.setdefault(run.namespace, []).append(
            PlacedRun(run.uid, run.labels, pod.name, assumed=True))
        self._index(run, pod.name, +1)

    def forget(self, run: PendingRun, pod: PodState) -> None:
        """Release an assumption whose bind lost a race."""
        resources.add(pod.used, run.requests, sign=-1)
        self.placed[run.namespace] = [p for p in self.placed.get(run.namespace, [])
                                      if p.uid != run.uid]
        self._index(run, pod.name, -1)

    def exclude(self, pod: PodState) -> None:
        """Stop offering a pod for the rest of this pass (its bind showed the snapshot stale)."""
        pod.ready = False

    def _index(self, run: PendingRun, pod_name: str, delta: int) -> None:
        for (namespace, selector), counts in self._targets.items():
            if namespace == run.namespace and selector.matches(run.labels):
                counts[pod_name] += delta
                if counts[pod_name] <= 0:
                    del counts[pod_name]
