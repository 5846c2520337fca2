"""The Runtime Pods from one pass to the next, read again only where they changed.

kube-scheduler keeps its nodes in a cache kept current from changes and snapshots it for each
cycle. Here a pass asks the database two small questions instead of reading every pod row:

- the count of pods and their highest ``resource_version``: every recorded change of a pod
  (``scheduling.pod_writer``: names, uid, readiness, phase, capacity, labels, ...) gives its
  row the cluster's next resourceVersion, and versions commit in order, so only the rows
  above the version last seen are read. Fewer pods than those cached means some went: then
  every row is read again, as it is every ``resync_seconds`` (which bounds how long a row
  written behind the writer could mislead it).
- how many pods are silent (no heartbeat within ``HEARTBEAT_TIMEOUT`` of the pass's time),
  and when some are, which (by the ``last_heartbeat`` index): heartbeats move every few
  seconds without a new version, and all a pass needs of them is which pods are fresh.

The ``PodState`` objects and their least-loaded orders live across passes. What a pass does to
them (Assume, release, exclusion, a resync of usage) is undone at the next pass's start for
the pods it touched, from the usage cache, which also says whose usage changed meanwhile; so a
pass for one new Run costs what changed, not the number of pods.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Hashable, Iterable
from datetime import datetime

from django.db.models import Count, Max, Q

from scheduling.models import RuntimePod

from .pod_rows import read_pods
from .snapshot import HEARTBEAT_TIMEOUT, PodIndex, PodState
from .usage_cache import UsageCache


def silent(now: datetime) -> Q:
    """The pods the availability Filter finds stale at ``now`` (as ``Snapshot.stale``)."""
    return Q(last_heartbeat__isnull=True) | Q(last_heartbeat__lt=now - HEARTBEAT_TIMEOUT)


class PodCache:
    def __init__(self, resync_seconds: float = 300.0) -> None:
        self.resync_seconds = resync_seconds
        self.rows: dict[int, PodState] = {}  # pk -> the pod as its row was last read
        self.index = PodIndex([])  # the PodStates passes work on, and their orders
        self.version: int | None = None  # every recorded pod change up to here is read
        self.synced_at = 0.0
        self.reloads = 0
        self.usage_rebuilds = -1  # the usage cache's rebuild the pods' usage follows
        # pods the last pass changed (its snapshot's set, filled while it runs)
        self.touched: set[int] = set()
        self.stale: frozenset[int] = frozenset()

    def refresh(self, now: datetime, usage: UsageCache) -> PodIndex:
        """The pods for a pass at ``now``, each with what active Runs use on it (``usage``,
        already current for this pass)."""
        stale_query = silent(now)
        counts = RuntimePod.objects.aggregate(
            total=Count("pk"),
            version=Max("resource_version"),
            stale=Count("pk", filter=stale_query),
        )
        total, version = counts["total"], counts["version"] or 0
        dirty: set[int] = set()
        if (
            self.version is None
            or version < self.version  # the newest pod went (or the rows were reset)
            or time.monotonic() - self.synced_at > self.resync_seconds
        ):
            self._reload()
        elif version != self.version or total != len(self.rows):
            changed = RuntimePod.objects.filter(resource_version__gt=self.version)
            dirty = self._apply(read_pods(changed))
            if total != len(self.rows):  # some went (or came while we read): read them all
                self._reload()
        self.version = version
        self.stale = frozenset(
            RuntimePod.objects.filter(stale_query).values_list("pk", flat=True)
            if counts["stale"]
            else ()
        )
        self._reset_usage(dirty | self.touched, usage)
        self.touched = set()
        return self.index

    def signature(self) -> Hashable:
        """What the pods offer, as parking compares it (see ``pod_rows.signature``): the
        pod changes seen, the pods there are and which of them are silent."""
        return (self.version, self.reloads, len(self.rows), self.stale)

    def _reload(self) -> None:
        pods = read_pods(RuntimePod.objects.all())
        self.rows = {pod.pk: pod for pod in pods}
        self.index = PodIndex([_copy(pod) for pod in pods])
        self.synced_at = time.monotonic()
        self.reloads += 1
        self.usage_rebuilds = -1  # every pod's usage is set anew

    def _apply(self, changed: Iterable[PodState]) -> set[int]:
        """Take in rows read again; the pks of the pods they replaced (their usage and
        readiness are set with the rest of the pass's dirty pods)."""
        dirty = set()
        for row in changed:
            old = self.rows.get(row.pk)
            if old is not None:
                self.index.remove(self.index.by_key[old.key])
            self.rows[row.pk] = row
            self.index.add(_copy(row))
            dirty.add(row.pk)
        return dirty

    def _reset_usage(self, dirty: set[int], usage: UsageCache) -> None:
        """Undo the last pass's changes to the pods it touched, and give the pods whose usage
        changed since (every pod after a rebuild of either cache) what they use now."""
        changed = usage.take_changed()
        if usage.rebuilds != self.usage_rebuilds:
            self.usage_rebuilds = usage.rebuilds
            pods: Iterable[PodState] = list(self.index.by_key.values())
        else:
            by_key = self.index.by_key
            for namespace, name, _ in changed:
                pod = by_key.get((namespace, name))
                if pod is not None:
                    dirty.add(pod.pk)
            pods = [pod for pk in dirty if (pod := self._pod(pk)) is not None]
        for pod in pods:
            row = self.rows[pod.pk]
            pod.ready = row.ready
            pod.used = dict(usage.usage.get((pod.namespace, pod.name, pod.uid), {}))
            self.index.reorder(pod)

    def _pod(self, pk: int) -> PodState | None:
        row = self.rows.get(pk)
        return None if row is None else self.index.by_key.get(row.key)


def _copy(row: PodState) -> PodState:
    """The PodState a pass works on, apart from the row as read (a pass changes its usage and
    may exclude it)."""
    return dataclasses.replace(row, capacity=dict(row.capacity), used={})


__all__ = ["PodCache", "silent"]
