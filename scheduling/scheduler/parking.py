"""Runs that found no pod, set aside until something they could be waiting for changes:
kube-scheduler's unschedulable queue, with one coarse hint.

A Run a pass could not place is parked with that pass's cluster token: the cluster's
resourceVersion (every write of every kind bumps it: Runs, Runtimes, PersistentWorkspaces,
Namespaces) and the signature of the Runtime Pods (not versioned: their rows less the
heartbeat times, plus which heartbeats are fresh). A later pass with the same token reads only
the queue's keys and skips each parked Run still at the version it was parked at: nothing it
could be waiting for has changed, so it would get the same answer. Any change re-examines every
parked Run, and so does ``FLUSH_SECONDS`` passing (kube-scheduler's
podMaxInUnschedulablePodsDuration), a safety net for what only time changes.
"""

from __future__ import annotations

import time
from collections.abc import Hashable

FLUSH_SECONDS = 60.0


class Parking:
    def __init__(self, flush_seconds: float = FLUSH_SECONDS) -> None:
        self.flush_seconds = flush_seconds
        self.token: Hashable | None = None
        self.since = 0.0
        self.runs: dict[int, int] = {}  # Run pk -> the resourceVersion it was parked at

    def begin(self, token: Hashable) -> bool:
        """A pass starts with ``token``; False when every parked Run must be looked at again."""
        now = time.monotonic()
        if token != self.token or now - self.since > self.flush_seconds:
            self.runs.clear()
            self.token, self.since = token, now
            return False
        return bool(self.runs)

    def parked(self, pk: int, resource_version: int) -> bool:
        return self.runs.get(pk) == resource_version

    def park(self, pk: int, resource_version: int) -> None:
        self.runs[pk] = resource_version

    def __len__(self) -> int:
        return len(self.runs)
