"""Slots for long-lived responses (log follows; watches later), so streams cannot starve the
web server: each holds a thread while it waits for output, so at most ``KRUNTIMES_MAX_STREAMS``
run per web process and ``KRUNTIMES_MAX_STREAMS_PER_USER`` per user; beyond that a request is
answered at once with a 429 Status, and ordinary requests keep their threads.

Under ASGI Django would read a sync stream to its end before sending a byte; a
``SlotStreamingResponse`` hands it over piece by piece instead, and a client that goes away
closes the stream (and gives the slot back) as soon as the piece being read is done; a stream
that may wait long for output yields empty pieces meanwhile, so it can be stopped between them."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import StreamingHttpResponse

from . import errors

RETRY_AFTER_SECONDS = 5
_lock = threading.Lock()
# pool -> (streams open, streams open by user): log follows and watches are counted apart
_open: Counter[str] = Counter()
_by_user: dict[str, Counter[str]] = {}
# pool -> the settings naming its limits (total per web process, per user) and their defaults
POOLS = {
    "stream": ("KRUNTIMES_MAX_STREAMS", 8, "KRUNTIMES_MAX_STREAMS_PER_USER", 4),
    "watch": ("KRUNTIMES_MAX_WATCHES", 4096, "KRUNTIMES_MAX_WATCHES_PER_USER", 1024),
}


def limits(pool: str = "stream") -> tuple[int, int]:
    total, total_default, user, user_default = POOLS[pool]
    return int(getattr(settings, total, total_default)), int(getattr(settings, user, user_default))


def in_use(pool: str = "stream") -> tuple[int, dict[str, int]]:
    with _lock:
        return _open[pool], dict(_by_user.get(pool, {}))


def acquire(user_key: str, pool: str = "stream") -> Callable[[], None]:
    """Take a slot of ``pool`` for ``user_key`` or raise a 429 Status; returns an idempotent
    release."""
    total_limit, user_limit = limits(pool)
    what = "watches" if pool == "watch" else "streams"
    with _lock:
        users = _by_user.setdefault(pool, Counter())
        if users[user_key] >= user_limit:
            raise too_many(
                f"{user_key} already has {user_limit} {what} open (the limit per "
                "user); close one or retry later"
            )
        if _open[pool] >= total_limit:
            raise too_many(
                f"the server already serves {total_limit} {what} (its limit); retry later"
            )
        _open[pool] += 1
        users[user_key] += 1
    released = threading.Event()

    def release() -> None:
        with _lock:
            if released.is_set():
                return
            released.set()
            _open[pool] -= 1
            users[user_key] -= 1
            if users[user_key] <= 0:
                del users[user_key]

    return release


def too_many(message: str) -> errors.StatusError:
    return errors.StatusError(429, "TooManyRequests", message)


class SlotStreamingResponse(StreamingHttpResponse):
    """A streaming response that gives its slot back when it ends or the client goes away."""

    def __init__(
        self,
        streaming_content: Iterable[bytes | str],
        *,
        release: Callable[[], None],
        **kwargs: Any,
    ) -> None:
        self._release = release
        super().__init__(_releasing(streaming_content, release), **kwargs)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._release()

    def __iter__(self) -> Iterator[bytes]:
        # a WSGI server cannot stop a stream between pieces: it gets only the text
        return (piece for piece in super().__iter__() if piece)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.is_async:
            async for chunk in super().__aiter__():
                yield chunk
            return
        # the request's own thread (thread_sensitive): the stream's database connection stays
        # on it, and close() waits for the piece being read rather than racing it
        parts = iter(cast(Iterator[bytes], self.streaming_content))

        def step() -> bytes | None:
            return next(parts, None)

        try:
            while (piece := await sync_to_async(step, thread_sensitive=True)()) is not None:
                if piece:  # an empty piece only hands control back (a quiet poll)
                    yield piece
        finally:
            # a disconnect cancels the send; Django then never calls close() itself
            await sync_to_async(self.close, thread_sensitive=True)()


def _releasing(
    content: Iterable[bytes | str], release: Callable[[], None]
) -> Iterator[bytes | str]:
    try:
        yield from content
    finally:
        release()
