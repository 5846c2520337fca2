"""The clients of ``bench watch-open``: raw HTTP/1.1 watches read by asyncio (hundreds in one
process), plain API calls, and a prober process timing ordinary GETs the whole while.

Each watch and each probe uses a connection of its own, as separate kubectl processes do, so
``manage.py up``'s web workers share them as they would share real clients.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Target:
    """Where the server is and how to authenticate to it."""

    url: str  # scheme://host:port
    token: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def tls(self) -> ssl.SSLContext | None:
        if urlsplit(self.url).scheme != "https":
            return None
        context = ssl.create_default_context()
        context.check_hostname = False  # a bench against a local self-signed certificate
        context.verify_mode = ssl.CERT_NONE
        return context

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        tls = self.tls
        if tls is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=tls)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def call(
        self, method: str, path: str, body: Any = None, timeout: float = 30.0
    ) -> tuple[int, Any]:
        """One API call on a fresh connection: (status, parsed JSON body or None)."""
        connection = self.connection(timeout)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, None


# --- the prober: ordinary GETs, timed, from a process of its own --------------------------


def probe(
    target: Target, path: str, interval: float, ready: Event, stop: Event, out: Connection
) -> None:
    """GET ``path`` one after the other until ``stop`` (``ready`` once the first is answered);
    sends back [(start, seconds, status)] (status 0: no answer). A process of its own: the
    watch clients never hold its GIL."""
    samples: list[tuple[float, float, int]] = []
    while not stop.is_set():
        if samples:
            ready.set()
        started = time.time()
        clock = time.monotonic()
        try:
            status, _ = target.call("GET", path, timeout=60.0)
        except OSError:
            status = 0
        samples.append((started, time.monotonic() - clock, status))
        stop.wait(interval)
    out.send(samples)
    out.close()


# --- one watch -----------------------------------------------------------------------------------


@dataclass
class Watch:
    """What one watch saw: when its response started, its initial objects, the marker."""

    marker: bytes = b""  # the name whose ADDED event the bench waits for
    opened: float | None = None  # seconds from the start until the response began
    initial: int = 0  # ADDED events before the marker
    saw_marker: bool = False
    error: str = ""
    _seen: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, line: bytes) -> None:
        if not line.startswith(b'{"type":"ADDED"'):
            return
        if self.marker and self.marker in line:
            self.saw_marker = True
            self._seen.set()
        elif not self.saw_marker:
            self.initial += 1


async def open_watch(target: Target, path: str, watch: Watch, started: float) -> None:
    """Open a watch and read it until cancelled."""
    try:
        reader, writer = await asyncio.open_connection(
            target.host, target.port, ssl=target.tls, limit=1 << 22
        )
    except OSError as exc:
        watch.error = f"connect: {exc}"
        return
    try:
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: {target.host}\r\n"
                f"Authorization: Bearer {target.token}\r\nAccept: application/json\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status = await reader.readline()
        chunked = False
        while True:  # the headers
            header = await reader.readline()
            if header.lower().startswith(b"transfer-encoding: chunked"):
                chunked = True
            if header in (b"\r\n", b""):
                break
        if b" 200 " not in status:
            watch.error = status.decode(errors="replace").strip() or "no answer"
            return
        watch.opened = time.monotonic() - started
        await _read_lines(reader, chunked, watch)
    except (asyncio.IncompleteReadError, ConnectionError, ValueError) as exc:
        watch.error = watch.error or f"stream: {exc!r}"
    finally:
        writer.close()


async def _read_lines(reader: asyncio.StreamReader, chunked: bool, watch: Watch) -> None:
    pending = b""
    while True:
        if chunked:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                return
            data = (await reader.readexactly(size + 2))[:-2]
        else:
            data = await reader.read(1 << 16)
            if not data:
                return
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            watch.take(line)


async def wait_for_markers(watches: list[Watch], timeout: float) -> None:
    """Until every open watch saw its marker, or ``timeout``."""
    waits = [asyncio.ensure_future(w._seen.wait()) for w in watches if w.opened is not None]
    if not waits:
        return
    _, pending = await asyncio.wait(waits, timeout=timeout)
    for wait in pending:
        wait.cancel()
