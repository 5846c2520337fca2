"""The one way controllers record Events: what happened to an object, for people.

As client-go's EventRecorder with its EventCorrelator:
- an Event repeating one already recorded (same object uid, type, reason, source and
  message) bumps that Event's ``count`` and ``lastTimestamp`` instead of adding a row;
- each (source, object) has a token bucket (``KRUNTIMES_EVENT_BURST`` Events at once, then
  one per ``KRUNTIMES_EVENT_REFILL_SECONDS``); beyond it Events are dropped and counted
  (``kruntimes_events_dropped_total``, and a warning naming how many);
- a message is cut to ``MAX_MESSAGE_LENGTH`` characters (the last three ``...``).

Callers pass only reason strings and messages they compose themselves from names, phases and
condition reasons: never a spec's values, a report's free text or a Secret's. A failure to
record is logged and never fails the caller's work (in a savepoint of its transaction).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from prometheus_client import Counter

from portal.auth.identities import register_controller
from portal.event_kinds import MAX_MESSAGE_LENGTH, NORMAL, WARNING
from portal.machinery import bulk_insert, history, store
from portal.machinery.admission import WriteContext
from portal.machinery.conditions import format_time
from portal.machinery.registry import ResourceKind, registry

log = logging.getLogger(__name__)
COMPONENT = "kruntimes-controller-manager"
MAX_BUCKETS = 4096  # client-go's maxLruCacheEntries
NAME_ROOM = 253 - 17  # an Event is named <object>.<hex nanoseconds>

RECORDER = WriteContext(
    user=register_controller(
        "event-recorder",
        [{"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "create", "patch"]}],
    )
)
DROPPED = Counter(
    "kruntimes_events_dropped_total",
    "Events not recorded because their object's rate bucket was empty, by the object's kind",
    ["kind"],
)

__all__ = ["NORMAL", "WARNING", "record", "truncated"]


def truncated(message: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """At most ``limit`` characters, as client-go cuts an Event's note."""
    return message if len(message) <= limit else message[: limit - 3] + "..."


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    dropped: int = 0


class SpamFilter:
    """A token bucket per (source, object), least recently used forgotten past MAX_BUCKETS
    (client-go's EventSourceObjectSpamFilter)."""

    def __init__(self) -> None:
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: tuple[str, ...], now: float | None = None) -> tuple[bool, int]:
        """(whether an Event may be recorded now, how many this key has dropped so far)."""
        burst = float(settings.KRUNTIMES_EVENT_BURST)
        refill = float(settings.KRUNTIMES_EVENT_REFILL_SECONDS)
        now = time.monotonic() if now is None else now
        with self._lock:
            bucket = self._buckets.pop(key, None) or _Bucket(tokens=burst, stamp=now)
            self._buckets[key] = bucket
            while len(self._buckets) > MAX_BUCKETS:
                self._buckets.popitem(last=False)
            if refill > 0:
                bucket.tokens = min(burst, bucket.tokens + (now - bucket.stamp) / refill)
            bucket.stamp = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return True, bucket.dropped
            bucket.dropped += 1
            return False, bucket.dropped

    def reset(self) -> None:
        with self._lock:
            self._buckets.clear()


spam_filter = SpamFilter()


def reference(obj: Any, kind: ResourceKind | None = None) -> dict[str, str]:
    """The ObjectReference of a stored object (or of anything with its name, namespace, uid
    and resource_version, such as the scheduler's PendingRun, given its kind)."""
    kind = kind or registry.for_model(type(obj))
    if kind is None:
        raise ValueError(f"no kind is registered for {type(obj).__name__}")
    ref = {"apiVersion": kind.api_version, "kind": kind.kind, "name": obj.name}
    if kind.namespaced:
        ref["namespace"] = obj.namespace
    ref["uid"] = str(obj.uid)
    if getattr(obj, "resource_version", None):
        ref["resourceVersion"] = str(obj.resource_version)
    return ref


def record(
    obj: Any,
    reason: str,
    message: str,
    *,
    type: str = NORMAL,
    kind: ResourceKind | None = None,
    component: str = COMPONENT,
    action: str = "",
) -> Any | None:
    """Record that ``reason`` happened to ``obj`` (an Event, or one more of an Event seen
    before); the Event written, or None when it was dropped or could not be written."""
    try:
        ref = reference(obj, kind)
    except ValueError:
        log.warning("no Event for %r: its kind is not registered", obj)
        return None
    namespace = ref.get("namespace") or "default"
    allowed, dropped = spam_filter.allow(
        (component, namespace, ref["kind"], ref["name"], ref["uid"])
    )
    if not allowed:
        DROPPED.labels(ref["kind"]).inc()
        if dropped == 1 or dropped % 100 == 0:
            log.warning(
                "Events for %s %s/%s are over their rate: %d dropped so far (latest %s)",
                ref["kind"],
                namespace,
                ref["name"],
                dropped,
                reason,
            )
        return None
    try:
        with transaction.atomic():  # a savepoint: a failure leaves the caller's work intact
            return _write(ref, namespace, reason, truncated(message), type, component, action)
    except Exception:  # noqa: BLE001 - an Event is never worth failing the work it describes
        log.warning("could not record Event %s for %s", reason, ref["name"], exc_info=True)
        return None


def record_new(
    items: list[tuple[Any, str, str, str]],
    *,
    kind: ResourceKind | None = None,
    component: str = COMPONENT,
) -> int:
    """Record many Events known to be new, (object, reason, message, type) each, in one
    insert: a batch writer's (the scheduler binds hundreds of Runs at once, each its own
    Event). The rate bucket and the bounds apply; the write path's checks are the ones these
    fields pass by construction. Returns how many were written."""
    from portal.models import Event

    event_kind = registry.for_model(Event)
    assert event_kind is not None
    now = timezone.now()
    stamp = format_time(now)
    rows = []
    for obj, reason, message, type in items:
        ref = reference(obj, kind)
        namespace = ref.get("namespace") or "default"
        allowed, _ = spam_filter.allow((component, namespace, ref["kind"], ref["name"], ref["uid"]))
        if not allowed:
            DROPPED.labels(ref["kind"]).inc()
            continue
        event = Event(
            name=f"{ref['name'][:NAME_ROOM]}.{time.time_ns() + len(rows):x}",
            namespace=namespace,
            involved_object=ref,
            reason=reason,
            message=truncated(message),
            type=type,
            count=1,
            first_timestamp=stamp,
            last_timestamp=stamp,
            source={"component": component},
            reporting_component=component,
            reporting_instance=settings.KRUNTIMES_EVENT_INSTANCE,
            action=reason,
            creation_timestamp=now,
        )
        event.sync_columns()
        rows.append(event)
    if not rows:
        return 0
    try:
        with transaction.atomic():
            last = history.allocate(len(rows))
            for index, event in enumerate(rows):
                event.resource_version = last - len(rows) + 1 + index
            # their watch events in the same statement where the database can render them
            recorded = history.record_sql(event_kind, "inserted", history.ADDED)
            if recorded is not None:
                bulk_insert.insert(Event, rows, then=recorded)
            else:
                bulk_insert.insert(Event, rows)
                history.record_many(event_kind, rows, history.ADDED)
    except Exception:  # noqa: BLE001 - as record: never fail the work described
        log.warning("could not record %d Events", len(rows), exc_info=True)
        return 0
    return len(rows)


def _write(
    ref: dict[str, str],
    namespace: str,
    reason: str,
    message: str,
    type: str,
    component: str,
    action: str,
) -> Any:
    from portal.models import Event

    kind = registry.for_model(Event)
    assert kind is not None
    now = format_time(timezone.now())
    seen = (
        Event.objects.filter(
            namespace=namespace,
            involved_uid=ref["uid"],
            reason=reason,
            type=type,
            reporting_component=component,
            message=message,
        )
        .order_by("-last_seen")
        .first()
    )
    if seen is not None:
        return store.patch(
            kind,
            namespace,
            seen.name,
            {"count": (seen.count or 1) + 1, "lastTimestamp": now, "involvedObject": ref},
            context=RECORDER,
        )
    return store.create(
        kind,
        {
            "metadata": {"name": f"{ref['name'][:NAME_ROOM]}.{time.time_ns():x}"},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": settings.KRUNTIMES_EVENT_INSTANCE,
            "action": action or reason,
        },
        namespace=namespace,
        context=RECORDER,
    )


def events_for(obj: Any, limit: int = 50) -> list[Any]:
    """The newest Events about ``obj`` (its uid), newest first: what a page about it lists."""
    from portal.models import Event

    namespace = getattr(obj, "namespace", None) or "default"
    return list(
        Event.objects.filter(namespace=namespace, involved_uid=str(obj.uid)).order_by(
            "-last_seen", "-pk"
        )[:limit]
    )
