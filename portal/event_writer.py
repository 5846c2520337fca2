"""Batches of new Events written behind the batch writer, on a thread of their own.

The scheduler records one Event per bound Run; writing them (their rows, their watch events,
a commit) took as long as the binds they describe, and the binds waited for it. As client-go's
EventBroadcaster records asynchronously, ``submit`` hands a batch to this process's writer
thread and returns: the thread writes it with ``events_recorder.record_new`` (the rate
buckets, the bounds and the failure handling are the same), on its own database connection.

- Batches are written in the order they are submitted. The queue holds ``capacity``
  batches; a full queue makes ``submit`` wait (up to ``SUBMIT_TIMEOUT`` seconds: a writer
  that cannot keep up slows its producer instead of losing what it was given), and only then
  are the Events dropped and counted (``kruntimes_events_dropped_total``).
- Events stay best-effort: what is queued when the process dies is lost, ``capacity`` batches
  at most (the binds are not: they committed before). ``flush`` waits for what was submitted
  so far; it runs when a Celery worker process or the interpreter exits.
- ``submit_on_commit`` hands a batch over once the caller's transaction commits: the Events
  of a Run's phases, recorded where a report lands, are written behind the report.
- ``KRUNTIMES_EVENT_WRITER=inline`` writes in the caller instead (the test suite, and SQLite,
  which allows one writer at a time anyway).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction

from portal.machinery.registry import ResourceKind

log = logging.getLogger(__name__)
SUBMIT_TIMEOUT = 30.0
IDLE_SECONDS = 5.0  # then the thread closes its database connection until the next batch
Batch = tuple[list[tuple[Any, str, str, str]], ResourceKind | None, str]


@dataclass(frozen=True)
class _Stop:
    done: threading.Event


# a batch to write; a flush's marker (set when reached); the end of the thread
Item = Batch | threading.Event | _Stop


class EventWriter:
    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._queue: queue.Queue[Item] = queue.Queue(capacity)
        self._thread: threading.Thread | None = None
        self.written = 0  # Events this process's thread has written

    def submit(
        self, items: list[tuple[Any, str, str, str]], kind: ResourceKind | None, component: str
    ) -> bool:
        """Have the Events of ``items`` written (see ``events_recorder.record_new``); False
        when they were dropped, the queue having stayed full."""
        from portal import events_recorder

        if not items:
            return True
        if settings.KRUNTIMES_EVENT_WRITER == "inline":
            events_recorder.record_new(items, kind=kind, component=component)
            return True
        try:
            self._started().put((items, kind, component), timeout=SUBMIT_TIMEOUT)
            return True
        except queue.Full:
            label = kind.kind if kind is not None else "unknown"
            events_recorder.DROPPED.labels(label).inc(len(items))
            log.warning(
                "dropped %d Events: the Event writer is %d batches behind",
                len(items),
                self.capacity,
            )
            return False

    def submit_on_commit(
        self, items: list[tuple[Any, str, str, str]], kind: ResourceKind | None, component: str
    ) -> None:
        """``submit`` once the caller's transaction commits (an Event of a write that rolled
        back would tell of something that never happened); inline, written in the caller's
        transaction (in a savepoint: a failure leaves the caller's work intact)."""
        if settings.KRUNTIMES_EVENT_WRITER == "inline":
            self.submit(items, kind, component)
        else:
            transaction.on_commit(lambda: self.submit(items, kind, component), robust=True)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every batch submitted so far is written; False on timeout."""
        if self._pid != os.getpid():
            return True  # no thread here: nothing was queued in this process
        done = threading.Event()
        try:
            self._queue.put(done, timeout=timeout)
        except queue.Full:
            return False
        return done.wait(timeout)

    def _started(self) -> queue.Queue[Item]:
        """This process's queue, its thread started on first use (a forked child starts its
        own: a thread does not survive the fork)."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._queue = queue.Queue(self.capacity)
                self._thread = threading.Thread(
                    target=self._run, args=(self._queue,), name="event-writer", daemon=True
                )
                self._thread.start()
                atexit.register(self.flush, 5.0)
            return self._queue

    def stop(self, timeout: float | None = None) -> bool:
        """Write what was handed over, then end the thread and close its connection."""
        if self._pid != os.getpid():
            return True
        done = threading.Event()
        try:
            self._queue.put(_Stop(done), timeout=timeout)
        except queue.Full:
            return False
        self._pid = None  # a later submit starts a new thread
        return done.wait(timeout)

    def _run(self, batches: queue.Queue[Item]) -> None:
        from portal import events_recorder

        while True:
            try:
                batch = batches.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                connection.close()  # idle: its connection is not held for nothing
                continue
            if isinstance(batch, _Stop):
                connection.close()
                batch.done.set()
                return
            if isinstance(batch, threading.Event):
                batch.set()
                continue
            items, kind, component = batch
            close_old_connections()  # a connection gone bad (or too old) is opened anew
            try:
                self.written += events_recorder.record_new(items, kind=kind, component=component)
            except Exception:  # noqa: BLE001 - the thread outlives any one batch
                log.warning("could not record %d Events", len(items), exc_info=True)
                connection.close()


writer = EventWriter()
