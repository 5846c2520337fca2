"""Keyed work queues for controllers, as controller-runtime's workqueue keeps them.

A controller is told *which* object to look at, never what happened to it: ``add(queue,
key)`` marks a key (a WorkflowRun's UID, say) to be reconciled. The queue is a table, so it is
shared by every worker process and survives a restart (a lost Celery message delays a key,
it never loses it):

- **Merged.** One row per (queue, key): however many wake-ups arrive while a key waits, it is
  reconciled once (the earliest due time wins).
- **One worker per key.** A worker claims a key (a compare-and-set of ``claimed_until``)
  before it reconciles it; a wake-up that arrives meanwhile marks the row dirty, and the key
  is reconciled once more after, by whoever claims it next. A worker killed mid-key lets it
  go when its claim expires (``LEASE``).
- **Retried with backoff.** A key whose reconcile raised waits ``backoff(failures)`` (50 ms
  doubling to 60 s, per key) and is tried again; a success resets it.
- **Requeued after.** A handler that returns ``Requeue(after)`` has its key reconciled again
  in ``after`` seconds (what it waits for is due then: a retry's backoff, a poll), as
  controller-runtime's ``Result{RequeueAfter}``; the key stays in the table meanwhile, so the
  wait survives a restart.
- **Drained by one task name.** ``add`` sends ``portal.tasks.process_queue`` for the queue
  after the commit; the task claims and reconciles due keys until none is left (``BATCH`` at
  most, then it sends itself again). Beat resyncs: each controller's periodic pass adds every
  key it owns, which heals anything a crash or an outage lost.

A queue's handler is registered with ``register(queue, handler)`` from its app's ``ready()``;
the handler reconciles one key and raises to have it retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from .events import send_on_commit

log = logging.getLogger(__name__)

BASE_BACKOFF_SECONDS = 0.05
MAX_BACKOFF_SECONDS = 60.0
LEASE = timedelta(minutes=5)
BATCH = 100
CANDIDATES = 8  # due keys read per claim attempt (another worker may take some first)


@dataclass(frozen=True)
class Requeue:
    """A handler's answer: reconcile this key again in ``after`` seconds."""

    after: float


Handler = Callable[[str], object]  # returns a Requeue to have its key again later
_handlers: dict[str, Handler] = {}
_leases: dict[str, timedelta] = {}


def register(queue: str, handler: Handler, *, lease: timedelta = LEASE) -> None:
    """``handler(key)`` reconciles one key of ``queue`` (raises: retried with backoff). A
    claim lasts ``lease``: how long a key a killed worker held waits before another takes it
    (make it longer than any reconcile of the queue takes)."""
    _handlers[queue] = handler
    _leases[queue] = lease


def handler(queue: str) -> Handler:
    try:
        return _handlers[queue]
    except KeyError:
        raise KeyError(f"no handler is registered for the work queue {queue!r}") from None


def backoff(failures: int) -> float:
    """Seconds before the next try of a key that failed ``failures`` times in a row."""
    exponent = min(max(failures - 1, 0), 30)
    return float(min(MAX_BACKOFF_SECONDS, BASE_BACKOFF_SECONDS * 2.0**exponent))


def _table() -> str:
    from .models import WorkItem

    return connection.ops.quote_name(WorkItem._meta.db_table)


def add(queue: str, key: str, *, after: float = 0.0, now: datetime | None = None) -> None:
    """Have ``key`` reconciled (not before ``after`` seconds), once however often it is added
    before a worker takes it; then have the queue drained after the commit."""
    add_many(queue, [key], after=after, now=now)


def add_many(
    queue: str, keys: Iterable[str], *, after: float = 0.0, now: datetime | None = None
) -> int:
    """``add`` for many keys (the resync of a periodic pass); how many were given."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return 0
    now = now or timezone.now()
    ops = connection.ops
    due = ops.adapt_datetimefield_value(now + timedelta(seconds=after))
    added = ops.adapt_datetimefield_value(now)
    table = _table()
    rows = ", ".join(["(%s, %s, %s, %s, NULL, 0, %s)"] * len(keys))
    params: list[Any] = []
    for key in keys:
        params += [queue, key, due, True, added]
    # one statement on PostgreSQL and SQLite alike: a waiting key keeps one row, the earlier
    # due time wins, and a claimed one is marked dirty (reconciled once more after its worker)
    sql = (
        f"INSERT INTO {table} (queue, key, due_at, dirty, claimed_until, failures, added_at) "
        f"VALUES {rows} ON CONFLICT (queue, key) DO UPDATE SET dirty = excluded.dirty, "
        f"due_at = CASE WHEN excluded.due_at < {table}.due_at "
        f"THEN excluded.due_at ELSE {table}.due_at END"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    kick(queue, after)
    return len(keys)


def kick(queue: str, after: float = 0.0) -> None:
    """Have a worker drain ``queue`` after the commit (in ``after`` seconds)."""
    from portal import task_names

    if after > 0:
        send_on_commit(task_names.PROCESS_QUEUE, queue, countdown=after)
    else:
        send_on_commit(task_names.PROCESS_QUEUE, queue)


@dataclass
class Drained:
    """What one ``process`` did."""

    reconciled: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    retry_in: float | None = None  # the soonest backoff of a failed key or requeue
    more: bool = False  # stopped at the batch limit with keys maybe left

    def soonest(self, delay: float) -> None:
        self.retry_in = delay if self.retry_in is None else min(self.retry_in, delay)


def free(now: datetime) -> Q:
    """The rows no worker holds at ``now`` (never claimed, or their claim expired)."""
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def claim(queue: str, now: datetime) -> tuple[int, str] | None:
    """Take one due key no other worker holds: (row id, key), or None."""
    from .models import WorkItem

    unheld = free(now)
    due = (
        WorkItem.objects.filter(unheld, queue=queue, due_at__lte=now)
        .order_by("due_at", "pk")
        .values_list("pk", "key")[:CANDIDATES]
    )
    for pk, key in due:
        if WorkItem.objects.filter(unheld, pk=pk).update(
            claimed_until=now + _leases.get(queue, LEASE), dirty=False
        ):
            return pk, key
    return None


def done(pk: int, now: datetime | None = None, requeue: Requeue | None = None) -> bool:
    """The key was reconciled: forget it, unless it was added again meanwhile (then let it
    go, due at once) or its handler asked for it again (then due ``requeue.after`` on, or at
    once if it was added meanwhile). True when it was forgotten."""
    from .models import WorkItem

    if requeue is None and WorkItem.objects.filter(pk=pk, dirty=False).delete()[0]:
        return True
    if requeue is not None:
        now = now or timezone.now()
        WorkItem.objects.filter(pk=pk, dirty=False).update(
            claimed_until=None, failures=0, due_at=now + timedelta(seconds=requeue.after)
        )
    WorkItem.objects.filter(pk=pk, claimed_until__isnull=False).update(
        claimed_until=None, failures=0
    )
    return False


def failed(pk: int, now: datetime) -> float:
    """The reconcile raised: try again after the key's backoff; the backoff in seconds."""
    from .models import WorkItem

    failures = WorkItem.objects.filter(pk=pk).values_list("failures", flat=True).first() or 0
    delay = backoff(failures + 1)
    WorkItem.objects.filter(pk=pk).update(
        claimed_until=None, failures=failures + 1, due_at=now + timedelta(seconds=delay)
    )
    return delay


def process(
    queue: str,
    handle: Handler | None = None,
    *,
    limit: int = BATCH,
    clock: Callable[[], datetime] = timezone.now,
) -> Drained:
    """Reconcile the due keys of ``queue``, one at a time, ``limit`` at most."""
    handle = handle or handler(queue)
    drained = Drained()
    while len(drained.reconciled) + len(drained.failed) < limit:
        claimed = claim(queue, clock())
        if claimed is None:
            return drained
        pk, key = claimed
        try:
            outcome = handle(key)
        except Exception:  # noqa: BLE001 - any failure of one key: retried, the rest go on
            delay = failed(pk, clock())
            log.warning(
                "%s: reconciling %s failed; again in %.2f s", queue, key, delay, exc_info=True
            )
            drained.failed.append(key)
            drained.soonest(delay)
        else:
            requeue = outcome if isinstance(outcome, Requeue) else None
            done(pk, clock(), requeue)
            drained.reconciled.append(key)
            if requeue is not None:
                drained.soonest(requeue.after)
    drained.more = True
    return drained
