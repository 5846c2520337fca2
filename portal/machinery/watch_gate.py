"""Watches open a few at a time, so opening many never stalls the other requests.

Under ASGI Django gives every request a thread of its own for its sync code, and a watch's
opening (authentication, authorization, the initial list, the history after it) needs a
database connection from the process's pool (``KRUNTIMES_DB_POOL_SIZE``). Five hundred watches
opened at once were five hundred threads queued on that pool, and every other request queued
behind them: 7-10 s with no answer. The gate lets at most ``KRUNTIMES_WATCH_OPENINGS`` watches
per web process open at once; the others wait on the event loop, holding no thread and no
connection. A watch gives its place back as soon as its response starts (its stream then reads
no database: the hub does), or when it ends any other way (an error Status, a client gone).
Other requests never wait on the gate. ``KRUNTIMES_WATCH_OPENINGS=0`` turns it off.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from django.conf import settings

from .watch import TRUE

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_OPENINGS = 4


def is_watch(scope: Scope) -> bool:
    """A GET whose ``watch`` parameter is true, read as the list view reads it (the last
    value wins)."""
    if scope.get("type") != "http" or scope.get("method") != "GET":
        return False
    query = bytes(scope.get("query_string") or b"").decode("utf-8", "replace")
    values = [value for key, value in parse_qsl(query, keep_blank_values=True) if key == "watch"]
    return bool(values) and values[-1] in TRUE


def openings() -> int:
    """How many watches of one web process may open at once (0: no limit)."""
    return int(getattr(settings, "KRUNTIMES_WATCH_OPENINGS", DEFAULT_OPENINGS))


class WatchGate:
    """An ASGI application that hands watch requests to ``app`` a few at a time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # one set of places per event loop (a web process has one; tests start several)
        self._places: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._places = weakref.WeakKeyDictionary()

    def places(self) -> asyncio.Semaphore | None:
        limit = openings()
        if limit <= 0:
            return None
        loop = asyncio.get_running_loop()
        places = self._places.get(loop)
        if places is None:
            places = self._places[loop] = asyncio.Semaphore(limit)
        return places

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        places = self.places() if is_watch(scope) else None
        if places is None:
            await self.app(scope, receive, send)
            return
        await places.acquire()
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                places.release()

        async def send_releasing(message: Message) -> None:
            if message.get("type") == "http.response.start":
                release()  # opened (or refused): the stream itself reads no database
            await send(message)

        try:
            await self.app(scope, receive, send_releasing)
        finally:
            release()
