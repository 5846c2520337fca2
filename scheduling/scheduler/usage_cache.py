"""What active Runs use per pod, kept from one pass to the next and updated from changes.

A pass asks the cache for pod usage instead of summing every active Run. The cache holds each
active Run's (namespace, pod, pod uid, requests); between passes it reads only the Run watch
events after the resourceVersion it has seen (the scheduler's own binds come back that way,
and so do completions, deletions and recoveries written by anyone), so a pass costs what
changed, not what exists. One read of the counter row says whether anything changed at all.

It is rebuilt from the Run rows when it has not been (first use), when the history it needs
was compacted away, when more changed than ``max_events``, and every ``resync_seconds``
(which bounds how long a row written without a watch event could mislead it). Applying an
event sets a Run's entry (or drops it), so an event a rebuild already saw is harmless.
"""

from __future__ import annotations

import gc
import json
import time
from functools import lru_cache
from typing import Any

from django.db import transaction
from django.db.models import CharField, TextField
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from scheduling.models import ACTIVE_PHASES, Run

from .pod_rows import uid_text
from .usage import _parsed

PodKey = tuple[str, str, str]  # (namespace, pod name, pod uid)
Requests = tuple[tuple[str, int], ...]
DEFAULT_REQUESTS: dict[str, Any] = {"runs": 1}  # what sync_columns fills in


def _requests(raw: Any) -> Requests:
    return _parsed(json.dumps(raw if raw else DEFAULT_REQUESTS))[0]


@lru_cache(maxsize=4096)
def _requests_text(text: str | None) -> Requests:
    return _requests(json.loads(text) if text else None)


class UsageCache:
    def __init__(
        self, resync_seconds: float = 30.0, max_events: int = 20_000, freeze: bool = False
    ) -> None:
        self.resync_seconds = resync_seconds
        self.max_events = max_events
        # after a rebuild, collect once and freeze the survivors out of the collector's
        # generations: the entries live until the next rebuild, and a full collection walking
        # them all is a long pause in some pass (unfrozen and collected again at each rebuild,
        # so nothing frozen is kept past its life)
        self.freeze = freeze
        self.cursor: int | None = None  # every Run change up to here is applied
        self.synced_at = 0.0
        self.runs: dict[str, tuple[PodKey, Requests]] = {}  # active Run uid -> its usage
        self.usage: dict[PodKey, dict[str, int]] = {}
        self.rebuilds = 0
        self.seen = 0
        # the pods whose usage changed since ``take_changed`` (a rebuild changes them all:
        # ``rebuilds`` counts those)
        self.changed: set[PodKey] = set()

    def current(self) -> dict[PodKey, dict[str, int]]:
        """Pod -> the whole-number requests of the Runs active on it now (do not mutate)."""
        from portal.machinery.models import ResourceVersionCounter

        row = ResourceVersionCounter.objects.filter(pk=1).values_list("value", "compacted_through")
        value, compacted = row.first() or (0, 0)
        self.seen = value  # the cluster's resourceVersion as this pass began
        stale = time.monotonic() - self.synced_at > self.resync_seconds
        if (
            self.cursor is None
            or stale
            or compacted > self.cursor
            or value < self.cursor
            or value > self.cursor
            and not self._catch_up(value)
        ):
            self.rebuild()
        return self.usage

    def invalidate(self) -> None:
        """Rebuild on the next ``current`` (a bind found a pod fuller than the cache said)."""
        self.cursor = None

    def rebuild(self) -> None:
        from portal.machinery import history

        with transaction.atomic():
            cursor = history.current()  # first: a write after it is applied again, harmlessly
            # as text: parsing 50,000 UUIDs and JSON documents cost more than reading them
            rows = Run.objects.filter(phase__in=ACTIVE_PHASES).values_list(
                Cast("uid", CharField()),
                "namespace",
                "assigned_pod",
                "assigned_pod_uid",
                Cast("requests", TextField()),
            )
            self.runs = {
                uid_text(uid): ((namespace, pod, pod_uid), _requests_text(raw))
                for uid, namespace, pod, pod_uid, raw in rows.iterator(chunk_size=5000)
            }
        self.usage = {}
        for key, requests in self.runs.values():
            self._add(key, requests, 1)
        self.changed = set()  # all of them: ``rebuilds`` says so
        self.cursor = cursor
        self.synced_at = time.monotonic()
        self.rebuilds += 1
        if self.freeze:
            gc.unfreeze()
            gc.collect()
            gc.freeze()

    def _catch_up(self, upto: int) -> bool:
        """Apply the Run events after the cursor; False when too many changed to bother."""
        from portal.machinery.models import WatchEvent
        from portal.machinery.registry import registry

        kind = registry.for_model(Run)
        assert kind is not None  # the Run kind is registered with the app
        assert self.cursor is not None
        events = (
            WatchEvent.objects.filter(
                kind_key=kind.key, resource_version__gt=self.cursor, resource_version__lte=upto
            )
            .order_by("resource_version")
            .values_list(
                "type",
                KeyTextTransform("uid", KeyTransform("metadata", "object")),
                KeyTextTransform("namespace", KeyTransform("metadata", "object")),
                KeyTextTransform("phase", KeyTransform("status", "object")),
                KeyTextTransform("assignedPod", KeyTransform("status", "object")),
                KeyTextTransform("assignedPodUID", KeyTransform("status", "object")),
                KeyTransform("requests", KeyTransform("resources", KeyTransform("spec", "object"))),
            )[: self.max_events + 1]
        )
        rows = list(events)
        if len(rows) > self.max_events:
            return False
        for kind_event, uid, namespace, phase, pod, pod_uid, raw in rows:
            if kind_event != "DELETED" and phase in ACTIVE_PHASES:
                self._set(str(uid), (namespace, pod or "", pod_uid or ""), _requests(raw))
            else:
                self._drop(str(uid))
        self.cursor = upto
        return True

    def _set(self, uid: str, key: PodKey, requests: Requests) -> None:
        old = self.runs.get(uid)
        if old == (key, requests):
            return
        if old is not None:
            self._add(*old, -1)
        self.runs[uid] = (key, requests)
        self._add(key, requests, 1)

    def _drop(self, uid: str) -> None:
        old = self.runs.pop(uid, None)
        if old is not None:
            self._add(*old, -1)

    def take_changed(self) -> set[PodKey]:
        """The pods whose usage changed since the last call (see ``rebuilds`` too)."""
        changed, self.changed = self.changed, set()
        return changed

    def _add(self, key: PodKey, requests: Requests, sign: int) -> None:
        self.changed.add(key)
        used = self.usage.setdefault(key, {})
        for name, amount in requests:
            used[name] = used.get(name, 0) + sign * amount
        if sign < 0 and not any(used.values()):
            del self.usage[key]
