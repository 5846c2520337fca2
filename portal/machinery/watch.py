"""``?watch=true`` on every list: the Kubernetes watch protocol over the watch history.

A watch streams ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": …}`` lines:

- without ``resourceVersion`` (or with ``"0"``, or with ``sendInitialEvents=true``) it starts
  with an ADDED event for every object the list would show, at one consistent version, then
  every change after it (``sendInitialEvents`` ends the initial events with a BOOKMARK
  annotated ``k8s.io/initial-events-end: "true"``, as kube-apiserver does);
- with ``resourceVersion=N`` it delivers every change after N, in order, once; N older than the
  kept history answers one ERROR event carrying a 410 ``Expired`` Status, so informers relist;
- a change that takes an object out of a label selection is a DELETED event to that watch (and
  one into it an ADDED), as kube-apiserver sends them;
- ``allowWatchBookmarks=true`` adds BOOKMARK events with the newest version the watch has passed;
  ``timeoutSeconds`` ends the stream (the server caps it).

One ``Hub`` per web process reads the history table (a short poll: one query per interval for
every watcher of the process) and hands each change to the watchers that want it; a watcher
only waits on its own buffer. Under ASGI a watch is an async stream that holds no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection
from django.http import StreamingHttpResponse

from . import errors, history, tables
from .labels import Selector, selector_parameter
from .manifest import list_item
from .registry import ResourceKind, registry

log = logging.getLogger(__name__)

BOOKMARK, ERROR = "BOOKMARK", "ERROR"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
BATCH = 1000  # history rows per hub query
TRUE = ("1", "t", "T", "true", "TRUE", "True")


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


# --- one watch's request -----------------------------------------------------------------


@dataclass(frozen=True)
class WatchRequest:
    kind: ResourceKind
    namespace: str | None
    selector: Selector
    fields: Mapping[str, str]  # {"name": …, "namespace": …} from fieldSelector
    resource_version: int | None  # None: start with the current state
    send_initial: bool
    bookmarks: bool
    timeout: float
    list_params: Mapping[str, str] = field(default_factory=dict)  # labelSelector, fieldSelector
    initial_end_bookmark: bool = False  # sendInitialEvents=true: mark the initial events' end
    table: str | None = None  # a meta.k8s.io Table version: each event's object is a Table
    include: str = "Metadata"  # the Table rows' includeObject

    def matches(
        self,
        namespace: str,
        name: str,
        labels: Mapping[str, str] | None,
        manifest: Mapping[str, Any] | None = None,
    ) -> bool:
        if self.namespace is not None and namespace != self.namespace:
            return False
        if "name" in self.fields and name != self.fields["name"]:
            return False
        if "namespace" in self.fields and namespace != self.fields["namespace"]:
            return False
        if not self._fields_match(manifest or {}):
            return False
        return self.selector.matches(labels or {})

    def _fields_match(self, manifest: Mapping[str, Any]) -> bool:
        """The kind's own fieldSelector labels (an Event's involvedObject.name), read from
        the object: such fields never change, so the object before a change has them too."""
        for label, column in self.kind.field_selectors.items():
            if column in self.fields and _field_at(manifest, label) != self.fields[column]:
                return False
        return True


def _field_at(manifest: Mapping[str, Any], label: str) -> str:
    value: Any = manifest
    for part in label.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def parse_request(
    kind: ResourceKind,
    namespace: str | None,
    params: Mapping[str, str],
    field_filters: Mapping[str, str],
    accept: str = "",
) -> WatchRequest:
    selector = selector_parameter(params)
    raw_version = params.get("resourceVersion") or ""
    send_initial = params.get("sendInitialEvents", "") in TRUE
    version: int | None = None
    if raw_version not in ("", "0"):
        try:
            version = int(raw_version)
            if version < 0:
                raise ValueError
        except ValueError:
            raise errors.bad_request(
                f'invalid resourceVersion "{raw_version}"',
                [errors.invalid("resourceVersion", "must be a resourceVersion this server gave")],
            ) from None
    if (
        send_initial
        and version is not None
        and params.get("resourceVersionMatch")
        not in (
            None,
            "",
            "NotOlderThan",
        )
    ):
        raise errors.bad_request(
            "sendInitialEvents requires resourceVersionMatch=NotOlderThan",
            [errors.invalid("resourceVersionMatch", "must be NotOlderThan with sendInitialEvents")],
        )
    limit = _setting("KRUNTIMES_WATCH_MAX_SECONDS", 1800.0)
    timeout = limit
    if params.get("timeoutSeconds"):
        try:
            timeout = float(int(params["timeoutSeconds"]))
            if timeout < 0:
                raise ValueError
        except ValueError:
            raise errors.bad_request(
                f'invalid timeoutSeconds "{params["timeoutSeconds"]}"',
                [errors.invalid("timeoutSeconds", "must be a non-negative integer")],
            ) from None
        timeout = min(timeout or limit, limit)
    bookmarks = params.get("allowWatchBookmarks", "") in TRUE
    return WatchRequest(
        kind=kind,
        namespace=namespace if kind.namespaced else None,
        selector=selector,
        fields=dict(field_filters),
        resource_version=None if send_initial else version,
        send_initial=send_initial or version is None,
        bookmarks=bookmarks,
        timeout=timeout,
        list_params={
            key: params[key] for key in ("labelSelector", "fieldSelector") if params.get(key)
        },
        initial_end_bookmark=send_initial and bookmarks,
        table=tables.requested_table(accept),
        include=tables.include_object(params),
    )


# --- events on the wire ----------------------------------------------------------------------


class Change:
    """One history row as the hub hands it out; its wire form is encoded once per event type
    (one change is ADDED to one watch and MODIFIED to another) and shared by every watch."""

    __slots__ = ("_lines", "kind_key", "name", "namespace", "object", "previous", "type", "version")

    def __init__(self, row: Any) -> None:
        self.version: int = row.resource_version
        self.kind_key: str = row.kind_key
        self.namespace: str = row.namespace
        self.name: str = row.name
        self.type: str = row.type
        self.object: dict[str, Any] = row.object
        self.previous: dict[str, str] | None = row.previous_labels
        self._lines: dict[str, bytes] = {}

    def line(self, event_type: str, request: WatchRequest, headers: bool = False) -> bytes:
        key = f"{event_type}/{request.table}/{request.include}/{headers}"
        cached = self._lines.get(key)
        if cached is None:
            kind = request.kind
            shown = kind.in_list(self.object) if kind.in_list is not None else self.object
            if request.table is None:
                cached = encode(event_type, shown)
            else:
                cached = encode(event_type, table_of(request, shown, headers))
            self._lines[key] = cached
        return cached

    def as_seen_by(self, request: WatchRequest) -> str | None:
        """The event type this change is to ``request``'s watch, or None if it sees nothing."""
        labels = (self.object.get("metadata") or {}).get("labels")
        now = request.matches(self.namespace, self.name, labels, self.object)
        if self.type == history.ADDED:
            return history.ADDED if now else None
        if self.type == history.DELETED:
            return history.DELETED if now else None
        before = request.matches(self.namespace, self.name, self.previous, self.object)
        if now and before:
            return history.MODIFIED
        if now:
            return history.ADDED
        if before:
            return history.DELETED
        return None


def table_of(request: WatchRequest, manifest: dict[str, Any], headers: bool) -> dict[str, Any]:
    """One object as a one-row Table; column definitions only in a watch's first Table, as
    kube-apiserver sends them."""
    obj = instance_of(request.kind, manifest)
    data = tables.table(
        request.kind,
        [obj],
        version=request.table or "v1",
        include=request.include,
        metadata={"resourceVersion": manifest["metadata"].get("resourceVersion", "")},
        manifest_of=lambda _: manifest,
    )
    if not headers:
        data["columnDefinitions"] = []
    return data


def instance_of(kind: ResourceKind, manifest: Mapping[str, Any]) -> Any:
    """An unsaved row holding ``manifest`` (the printer columns read rows)."""
    from .conditions import time_or_none

    if kind.from_manifest is not None:
        return kind.from_manifest(kind, manifest)
    meta = manifest.get("metadata") or {}
    obj = kind.model(name=meta.get("name", ""))
    if kind.namespaced:
        obj.namespace = meta.get("namespace", "")
    obj.uid = meta.get("uid") or obj.uid
    obj.resource_version = int(meta.get("resourceVersion") or 0)
    obj.generation = meta.get("generation") or 1
    obj.labels = meta.get("labels") or {}
    obj.annotations = meta.get("annotations") or {}
    obj.finalizers = meta.get("finalizers") or []
    obj.owner_references = meta.get("ownerReferences") or []
    obj.creation_timestamp = time_or_none(meta.get("creationTimestamp")) or obj.creation_timestamp
    obj.deletion_timestamp = time_or_none(meta.get("deletionTimestamp"))
    for wire in kind.body:
        if wire in manifest:
            setattr(obj, kind.attr(wire), manifest[wire])
    sync = getattr(obj, "sync_columns", None)
    if sync is not None:
        sync()
    return obj


def encode(event_type: str, obj: Mapping[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def bookmark(kind: ResourceKind, version: int, initial_end: bool = False) -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": str(version)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    return encode(
        BOOKMARK, {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": metadata}
    )


def expired(version: int, oldest: int) -> bytes:
    status = errors.StatusError(
        410,
        "Expired",
        f"too old resource version: {version} ({oldest})",
    ).to_status()
    return encode(ERROR, status)


# --- the hub ---------------------------------------------------------------------------------


@dataclass(eq=False)
class Watcher:
    """One watch's buffer: the hub appends what the watch wants, the stream takes it."""

    request: WatchRequest
    after: int  # the newest version this watch has delivered or decided it does not see
    limit: int = 10000
    buffer: deque[Change] = field(default_factory=deque)
    progress: int = 0  # the newest version the hub has passed
    overflowed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: Callable[[], None] | None = None  # a sync stream's wake-up, called from the hub
    # an async stream's event and its loop: the hub wakes each loop's streams in one call
    _event: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    def offer(self, changes: list[Change], progress: int) -> None:
        key = self.request.kind.key
        with self._lock:
            for change in changes:
                if change.kind_key == key and change.version > self.after:
                    if len(self.buffer) >= self.limit:
                        self.overflowed = True
                        break
                    self.buffer.append(change)
            self.progress = max(self.progress, progress)
        if self._wake is not None:
            self._wake()

    def take(self) -> tuple[list[Change], int]:
        with self._lock:
            taken = list(self.buffer)
            self.buffer.clear()
            return taken, self.progress


class Hub:
    """Reads the watch history once per interval for the whole process."""

    def __init__(self, interval: float | None = None, *, background: bool = True) -> None:
        self.interval = interval
        self.background = background  # False: the caller runs poll_once (tests, the bench)
        self.watchers: set[Watcher] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._seen = 0
        self._stopped = threading.Event()

    def subscribe(self, watcher: Watcher) -> None:
        with self._lock:
            self.watchers.add(watcher)
            if not self.background and self._thread is None:
                self._seen = self._seen or history.current()
            elif self._thread is None or not self._thread.is_alive():
                self._stopped.clear()
                self._seen = history.current()
                self._thread = threading.Thread(target=self._run, name="watch-hub", daemon=True)
                self._thread.start()
        watcher.progress = max(watcher.progress, self._seen)

    def unsubscribe(self, watcher: Watcher) -> None:
        with self._lock:
            self.watchers.discard(watcher)

    def stop(self) -> None:
        self._stopped.set()

    def poll_once(self) -> int:
        """Hand every committed change after the last one seen to the watchers; how many."""
        from .models import WatchEvent

        # the counter first: every change up to it has committed (versions commit in order),
        # so when no row is newer than what was seen, the watches have passed it too
        newest = history.current()
        rows = list(
            WatchEvent.objects.filter(resource_version__gt=self._seen).order_by("resource_version")[
                :BATCH
            ]
        )
        changes = [Change(row) for row in rows]
        # no newer row: every version up to the counter is passed (below what was seen: the
        # database was restored or flushed, as between tests)
        self._seen = changes[-1].version if changes else newest
        with self._lock:
            watchers = list(self.watchers)
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Event]] = {}
        for watcher in watchers:
            watcher.offer(changes, self._seen)
            if changes and watcher._loop is not None and watcher._event is not None:
                by_loop.setdefault(watcher._loop, []).append(watcher._event)
        for loop, events in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: its streams are gone
                loop.call_soon_threadsafe(_set_all, events)
        return len(changes)

    def _run(self) -> None:
        interval = self.interval or _setting("KRUNTIMES_WATCH_POLL_SECONDS", 0.05)
        while not self._stopped.is_set():
            try:
                with self._lock:
                    idle = not self.watchers
                if idle:
                    self._stopped.wait(interval)
                    continue
                if self.poll_once() < BATCH:
                    self._stopped.wait(interval)
            except Exception:  # a database hiccup: log, back off, keep serving the watches
                log.exception("the watch hub could not read the history; retrying")
                close_old_connections()
                self._stopped.wait(1.0)
        connection.close()


def _set_all(events: list[asyncio.Event]) -> None:
    for event in events:
        event.set()


_hub: Hub | None = None
_hub_lock = threading.Lock()


def hub() -> Hub:
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = Hub()
        return _hub


# --- a watch's stream --------------------------------------------------------------------------


def _snapshot(request: WatchRequest) -> tuple[int, list[dict[str, Any]]]:
    """(the version, every object the list shows, as a list shows it) at one moment."""
    from .listing import consistent_list

    version, items, _ = consistent_list(request.kind, request.namespace, request.list_params)
    return version, [list_item(request.kind, obj) for obj in items]


def _history_after(request: WatchRequest, version: int) -> list[Change]:
    from .models import WatchEvent

    rows = WatchEvent.objects.filter(
        kind_key=request.kind.key, resource_version__gt=version
    ).order_by("resource_version")
    return [Change(row) for row in rows.iterator()]


class Stream:
    """One watch from its start: the initial state or the history after its version, then the
    hub's live changes, each delivered once and in order."""

    def __init__(self, request: WatchRequest, source: Hub | None = None) -> None:
        self.request = request
        self.hub = source or hub()
        self.watcher = Watcher(request, after=0)
        self.started = time.monotonic()
        self.last_bookmark = self.started
        self.headers_sent = False  # a Table watch: the column definitions went out

    def start(self) -> list[bytes]:
        """Subscribe, then read what precedes the live changes (lines to send first)."""
        request = self.request
        self.hub.subscribe(self.watcher)
        if request.resource_version is not None:
            oldest = history.compacted_through()
            if request.resource_version < oldest:
                self.close()
                return [expired(request.resource_version, oldest)]
            self.watcher.after = request.resource_version
            return self._deliver(_history_after(request, request.resource_version))
        version, manifests = _snapshot(request)
        lines = [self._added(manifest) for manifest in manifests]
        self.watcher.after = version
        if request.initial_end_bookmark:
            lines.append(bookmark(request.kind, version, initial_end=True))
        return [*lines, *self._deliver(_history_after(request, version))]

    def _deliver(self, changes: list[Change]) -> list[bytes]:
        lines = []
        for change in changes:
            if change.version <= self.watcher.after:
                continue
            self.watcher.after = change.version
            seen_as = change.as_seen_by(self.request)
            if seen_as is not None:
                headers = self.request.table is not None and not self.headers_sent
                lines.append(change.line(seen_as, self.request, headers))
                self.headers_sent = self.headers_sent or headers
        return lines

    def _added(self, manifest: dict[str, Any]) -> bytes:
        """An initial ADDED event (a Table's column definitions in the first only)."""
        if self.request.table is None:
            return encode(history.ADDED, manifest)
        headers, self.headers_sent = not self.headers_sent, True
        return encode(history.ADDED, table_of(self.request, manifest, headers))

    def next_lines(self) -> list[bytes]:
        changes, progress = self.watcher.take()
        lines = self._deliver(changes)
        now = time.monotonic()
        interval = _setting("KRUNTIMES_WATCH_BOOKMARK_SECONDS", 10.0)
        if self.request.bookmarks and now - self.last_bookmark >= interval:
            self.last_bookmark = now
            self.watcher.after = max(self.watcher.after, progress)
            lines.append(bookmark(self.request.kind, self.watcher.after))
        return lines

    @property
    def done(self) -> bool:
        return self.watcher.overflowed or time.monotonic() - self.started >= self.request.timeout

    def remaining(self) -> float:
        return max(0.0, self.request.timeout - (time.monotonic() - self.started))

    def close(self) -> None:
        self.hub.unsubscribe(self.watcher)

    # sync (WSGI): the stream waits on its own buffer, a thread per watch
    def lines(self, first: list[bytes]) -> Iterator[bytes]:
        woken = threading.Event()
        self.watcher._wake = woken.set
        try:
            yield from first
            if first and first[-1].startswith(b'{"type":"ERROR"'):
                return
            while not self.done:
                woken.wait(min(1.0, self.remaining() or 0.01))
                woken.clear()
                yield from self.next_lines()
        finally:
            self.close()

    # async (ASGI): the stream awaits its buffer; the hub wakes it through its loop
    async def alines(self, first: list[bytes]) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        self.watcher._loop, self.watcher._event = loop, woken
        timer: asyncio.TimerHandle | None = None
        try:
            for line in first:
                yield line
            if first and first[-1].startswith(b'{"type":"ERROR"'):
                return
            while not self.done:
                # woken by the hub, or at the latest after a second (bookmarks, the timeout)
                timer = loop.call_later(min(1.0, self.remaining() or 0.01), woken.set)
                await woken.wait()
                timer.cancel()
                woken.clear()
                for line in self.next_lines():
                    yield line
        finally:
            if timer is not None:
                timer.cancel()
            self.close()


def kind_for_key(key: str) -> ResourceKind | None:
    for kind in registry.kinds:
        if kind.key == key:
            return kind
    return None


# --- the response ------------------------------------------------------------------------------


class WatchResponse(StreamingHttpResponse):
    """A watch stream that unsubscribes and gives its slot back however it ends."""

    def __init__(
        self, stream: Stream, first: list[bytes], *, release: Callable[[], None], asgi: bool
    ):
        self._stream, self._release = stream, release
        content = (
            _released_async(stream, first, release) if asgi else _released(stream, first, release)
        )
        super().__init__(content, content_type="application/json")
        self["Cache-Control"] = "no-cache, private"
        self["X-Accel-Buffering"] = "no"

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._stream.close()
            self._release()


def _released(stream: Stream, first: list[bytes], release: Callable[[], None]) -> Iterator[bytes]:
    try:
        yield from stream.lines(first)
    finally:
        release()


async def _released_async(
    stream: Stream, first: list[bytes], release: Callable[[], None]
) -> AsyncIterator[bytes]:
    try:
        async for line in stream.alines(first):
            yield line
    finally:
        release()


def respond(django_request: Any, user_key: str, request: WatchRequest) -> WatchResponse:
    """Start ``request``'s watch (a 429 Status past the watch limits)."""
    from . import streams

    release = streams.acquire(user_key, "watch")
    try:
        stream = Stream(request)
        first = stream.start()
    except BaseException:
        release()
        raise
    asgi = hasattr(django_request, "scope")
    response = WatchResponse(stream, first, release=release, asgi=asgi)
    # the stream reads no database (the hub does): give this request's connection back now,
    # or every open watch would hold one (PostgreSQL's max_connections would cap watches)
    if not connection.in_atomic_block:  # (a test's transaction keeps its connection)
        connection.close()
    return response
