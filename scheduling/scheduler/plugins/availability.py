"""RuntimePodAvailability: the pod is Running, Ready, heard from within 15 s, advertises every
requested resource, and the whole request vector fits what is left of its capacity. A request
larger than the pod's whole capacity is told apart from a pod that is merely busy."""

from __future__ import annotations

from runtimed.protocol import Reason
from scheduling.models import PodPhase

from ..framework import Plugin, State, Verdict
from ..snapshot import HEARTBEAT_TIMEOUT, PendingRun, PodState, Snapshot

__all__ = ["HEARTBEAT_TIMEOUT", "RuntimePodAvailability"]
NOT_READY = "NotReady"
STALE = "HeartbeatStale"
MISSING_RESOURCE = "MissingResource"
AT_CAPACITY = "AtCapacity"
EXCEEDS_CAPACITY = "ExceedsCapacity"
FRACTIONAL = Reason.FRACTIONAL_RESOURCE_REQUEST


class RuntimePodAvailability(Plugin):
    name = "RuntimePodAvailability"

    def pre_filter(self, run: PendingRun, snapshot: Snapshot, state: State) -> Verdict | None:
        if run.fractional:
            names = ", ".join(run.fractional)
            return Verdict(
                FRACTIONAL,
                f"resource requests must be whole numbers; {names} "
                "cannot be placed on any Runtime Pod",
                fatal=True,
                plugin=self.name,
            )
        return None

    def filter(
        self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State
    ) -> str | None:
        if pod.phase != PodPhase.RUNNING or not pod.ready:
            return NOT_READY
        if snapshot.stale(pod):
            return STALE
        for resource, amount in run.requests.items():
            if resource not in pod.capacity:
                return MISSING_RESOURCE
            if amount > pod.capacity[resource]:
                return EXCEEDS_CAPACITY  # would not fit even on the idle pod
            if pod.used.get(resource, 0) + amount > pod.capacity[resource]:
                return AT_CAPACITY
        return None
