"""The cluster's resourceVersion and the watch history.

Every write of every kind takes the next resourceVersion from one counter row
(``ResourceVersionCounter``) and records a ``WatchEvent`` (ADDED, MODIFIED or DELETED, with
the object as it is after the write, as a list shows it: ``ResourceKind.in_list``, which must
be idempotent, is applied before it is stored) in the same transaction. Taking the counter locks its row
until the transaction ends, so versions commit in the order they were given: a reader that has
seen version N has seen every change up to N, and a watch resumed from N gets every later
change, in order, once. No change is missed (the event commits with the write) or invented
(a write that rolls back takes its event with it).

The writers: ``portal.machinery.store`` (every API, admin and CLI write) and the kinds' status
writers, through ``compare_and_set`` (one object) and ``allocate`` + ``record`` (batches).

Recording a change is also what wakes the controllers: ``record`` and ``record_many`` hand each
change to its kind's watchers (``announce``), in the same transaction. The one exception is
``record_sql`` (a batch recorded by the statement that wrote it, for the scheduler's bind):
its caller announces what its watchers need.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import connection, models, transaction

from . import bulk_insert, counter_row
from .manifest import list_item
from .registry import ResourceKind, registry

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# set on an object as the store loads it: the labels a MODIFIED event's previous state had
PREVIOUS_LABELS = "_watch_previous_labels"


def _counter_model() -> Any:
    from .models import ResourceVersionCounter

    return ResourceVersionCounter


def _event_model() -> Any:
    from .models import WatchEvent

    return WatchEvent


def allocate(count: int = 1) -> int:
    """Take ``count`` new resourceVersions (the caller is in a transaction: they and the row
    lock last until it ends); returns the highest, the others precede it."""
    return counter_row.increment(_counter_model(), count)


def current() -> int:
    """The newest resourceVersion committed (what a list at this moment is at)."""
    value = _counter_model().objects.filter(pk=1).values_list("value", flat=True).first()
    return int(value or 0)


def compacted_through() -> int:
    value = (
        _counter_model().objects.filter(pk=1).values_list("compacted_through", flat=True).first()
    )
    return int(value or 0)


def remember_labels(obj: Any) -> Any:
    """Note ``obj``'s labels as loaded, for the event its next write records."""
    setattr(obj, PREVIOUS_LABELS, dict(obj.labels or {}))
    return obj


def event_row(kind: ResourceKind, obj: Any, event_type: str) -> Any:
    previous = getattr(obj, PREVIOUS_LABELS, None)
    if event_type == ADDED:
        previous = None
    elif previous is None:
        previous = dict(obj.labels or {})
    return _event_model()(
        resource_version=obj.resource_version,
        kind_key=kind.key,
        namespace=getattr(obj, "namespace", "") or "",
        name=obj.name,
        type=event_type,
        # what a watch shows, no more: a Secret's values never reach the history (a plain
        # JSON column, outside the Secret's encryption at rest)
        object=list_item(kind, obj),
        previous_labels=previous,
    )


def record(kind: ResourceKind, obj: Any, event_type: str) -> None:
    """Record one change (``obj`` holds its new resourceVersion and state) and announce it."""
    event_row(kind, obj, event_type).save(force_insert=True)
    remember_labels(obj)
    announce(kind, (obj,), event_type)


def record_many(kind: ResourceKind, objs: Iterable[Any], event_type: str = MODIFIED) -> None:
    objs = list(objs)
    rows = sorted(
        (event_row(kind, obj, event_type) for obj in objs), key=lambda e: e.resource_version
    )
    bulk_insert.insert(_event_model(), rows)
    announce(kind, objs, event_type)


def announce(kind: ResourceKind, objs: Iterable[Any], event_type: str) -> None:
    """The kind's watchers (``ResourceKind.on_change``: the controllers that watch it, added
    by whichever app builds on the kind) see each recorded change, in the writing transaction:
    every writer records through here, so every watcher sees every change, whoever wrote it.
    A watcher only marks work (a work queue key, an Event to write after the commit).
    Afterwards each object forgets what it was read as (``changes_announced``), so a change
    is announced once."""
    for obj in objs:
        for hook in kind.on_change:
            hook(obj, event_type)
        settle = getattr(obj, "changes_announced", None)
        if settle is not None:
            settle()


def record_sql(kind: ResourceKind, source: str, event_type: str = MODIFIED) -> str | None:
    """An INSERT of the watch events of the rows ``source`` names (a CTE of a statement that
    just wrote them, with their new resourceVersions): what ``record_many`` records, built in
    the database (see ``manifest_sql``). None when only Python can render the kind here."""
    from .manifest_sql import manifest_expression, sql_literal

    manifest = manifest_expression(kind, "w")
    if manifest is None:
        return None
    quote = connection.ops.quote_name
    event = _event_model()
    columns = ", ".join(
        quote(event._meta.get_field(name).column)
        for name in (
            "resource_version",
            "kind_key",
            "namespace",
            "name",
            "type",
            "object",
            "previous_labels",
            "created_at",
        )
    )
    model = kind.model._meta
    namespace = f"w.{quote(model.get_field('namespace').column)}" if kind.namespaced else "''"
    labels = f"w.{quote(model.get_field('labels').column)}"
    previous = "NULL" if event_type == ADDED else f"COALESCE({labels}, '{{}}'::jsonb)"
    return (
        f"INSERT INTO {quote(event._meta.db_table)} ({columns}) "
        f"SELECT w.{quote(model.get_field('resource_version').column)}, "
        f"{sql_literal(kind.key)}, {namespace}, w.{quote(model.get_field('name').column)}, "
        f"{sql_literal(event_type)}, {manifest}, {previous}, clock_timestamp() "
        f"FROM {source} AS w ORDER BY 1"
    )


def compare_and_set(obj: Any, fields: Mapping[str, Any], **guards: Any) -> bool:
    """Write ``fields`` on ``obj``'s row if it is still at the resourceVersion ``obj`` was read
    at (and matches ``guards``); record the change. True if it landed, and then ``obj`` holds
    the new fields and resourceVersion."""
    model = type(obj)
    kind = registry.for_model(model)
    with transaction.atomic():
        version = allocate()
        won = model.objects.filter(
            pk=obj.pk, resource_version=obj.resource_version, **guards
        ).update(resource_version=version, **fields)
        if not won:
            transaction.set_rollback(True)
            return False
        for name, value in fields.items():
            if not isinstance(value, models.expressions.BaseExpression):
                setattr(obj, name, value)
        obj.resource_version = version
        if kind is not None:
            record(kind, obj, MODIFIED)
    return True


def compact(keep_seconds: float, keep_at_least: int = 0, limit: int | None = None) -> int:
    """Drop history older than ``keep_seconds`` (keeping the newest ``keep_at_least`` events),
    the oldest ``limit`` of it at most (a bounded delete: call again while it deletes that
    many); a watch from a version before what remains is answered 410 Expired. Returns how
    many."""
    from datetime import timedelta

    from django.utils import timezone

    events = _event_model().objects
    cutoff = timezone.now() - timedelta(seconds=keep_seconds)
    doomed = events.filter(created_at__lt=cutoff)
    # first what is old enough, read from the created_at index (a Max of resource_version
    # walks the primary key down through every newer event when nothing is old enough); the
    # floor below walks ``keep_at_least`` index entries, worth it only when something is due.
    # Versions and times run together (a version is given just before its event is stamped):
    # a straggler stamped out of order is compacted a pass early or late, never lost.
    # (events stamped in the same instant are told apart by version: the newest of them)
    newest_doomed = (
        doomed.order_by("-created_at", "-resource_version")
        .values_list("resource_version", flat=True)
        .first()
    )
    if newest_doomed is None:
        return 0
    if keep_at_least:
        floor = (
            events.order_by("-resource_version")
            .values_list("resource_version", flat=True)[keep_at_least - 1 : keep_at_least]
            .first()
        )
        # only when the newest due event is among the kept ones: the Max walks the primary
        # key down from the floor through every newer event not yet due
        if floor is not None and newest_doomed >= floor:
            newest_doomed = doomed.filter(resource_version__lt=floor).aggregate(
                top=models.Max("resource_version")
            )["top"]
            if newest_doomed is None:
                return 0
    if limit is not None:
        oldest = (
            events.filter(resource_version__lte=newest_doomed)
            .order_by("resource_version")
            .values_list("resource_version", flat=True)[limit - 1 : limit]
            .first()
        )
        if oldest is not None:
            newest_doomed = oldest
    with transaction.atomic():
        removed, _ = events.filter(resource_version__lte=newest_doomed).delete()
        _counter_model().objects.filter(pk=1, compacted_through__lt=newest_doomed).update(
            compacted_through=newest_doomed
        )
    return int(removed)
