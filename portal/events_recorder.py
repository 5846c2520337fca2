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
import uuid
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
    fields pass by construction. Returns how many were written.

    The rows are made from one template Event (``new_rows``): what every Event of the batch
    shares is worked out once, and each row sets only its object's columns."""
    from portal.models import Event

    event_kind = registry.for_model(Event)
    assert event_kind is not None
    rows, names = new_rows(items, kind, component)
    if not rows:
        return 0
    try:
        with transaction.atomic():
            last = history.allocate(len(rows))
            version = _COLUMN["resource_version"]
            for index, row in enumerate(rows):
                row[version] = last - len(rows) + 1 + index
            # their watch events in the same statement where the database can render them
            recorded = history.record_sql(event_kind, "inserted", history.ADDED)
            bulk_insert.insert_rows(Event, rows, then=recorded or "")
            if recorded is None:  # rendered in Python, from the rows as stored
                stored = Event.objects.filter(
                    namespace__in={namespace for namespace, _ in names},
                    name__in=[name for _, name in names],
                ).order_by("resource_version")
                history.record_many(event_kind, stored, history.ADDED)
    except Exception:  # noqa: BLE001 - as record: never fail the work described
        log.warning("could not record %d Events", len(rows), exc_info=True)
        return 0
    return len(rows)


# the Event columns a row of ``new_rows`` sets itself (the rest come from the template)
_OWN = (
    "uid",
    "name",
    "namespace",
    "resource_version",
    "involved_object",
    "involved_kind",
    "involved_name",
    "involved_namespace",
    "involved_uid",
    "reason",
    "action",
    "message",
    "type",
)


class _Columns(dict):
    """Event field name -> its column, read from the model on first use."""

    def __missing__(self, name: str) -> str:
        from portal.models import Event

        column = self[name] = Event._meta.get_field(name).column
        return column


_COLUMN = _Columns()


def new_rows(
    items: list[tuple[Any, str, str, str]], kind: ResourceKind | None, component: str
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The rows (``bulk_insert.insert_rows``) of the new Events of ``items`` that their rate
    buckets allow, and their (namespace, name); resourceVersions are left to the caller. Each
    row is the template Event's (what ``Event.sync_columns`` derives from these fields, for
    an object of this kind) with the object's own columns set as ``sync_columns`` would."""
    from portal.models import Event

    now = timezone.now()
    stamp = format_time(now)
    template = Event(
        count=1,
        first_timestamp=stamp,
        last_timestamp=stamp,
        source={"component": component},
        reporting_component=component,
        reporting_instance=settings.KRUNTIMES_EVENT_INSTANCE,
        creation_timestamp=now,
    )
    template.sync_columns()
    base = {
        column: value
        for column, value in bulk_insert.row_of(Event, template).items()
        if column not in {_COLUMN[name] for name in _OWN}
    }
    uid_field = Event._meta.get_field("uid")
    column = _COLUMN
    rows: list[dict[str, Any]] = []
    names: list[tuple[str, str]] = []
    nanoseconds = time.time_ns()
    for obj, reason, message, type in items:
        ref = reference(obj, kind)
        namespace = ref.get("namespace") or "default"
        allowed, _ = spam_filter.allow((component, namespace, ref["kind"], ref["name"], ref["uid"]))
        if not allowed:
            DROPPED.labels(ref["kind"]).inc()
            continue
        name = f"{ref['name'][:NAME_ROOM]}.{nanoseconds + len(rows):x}"
        row = dict(base)
        row[column["uid"]] = bulk_insert.column_value(uid_field, uuid.uuid4())
        row[column["name"]] = name
        row[column["namespace"]] = namespace
        row[column["involved_object"]] = ref
        row[column["involved_kind"]] = ref["kind"][:253]
        row[column["involved_name"]] = ref["name"][:253]
        row[column["involved_namespace"]] = ref.get("namespace", "")[:63]
        row[column["involved_uid"]] = ref["uid"][:64]
        row[column["reason"]] = reason
        row[column["action"]] = reason
        row[column["message"]] = truncated(message)
        row[column["type"]] = type
        rows.append(row)
        names.append((namespace, name))
    return rows, names


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
