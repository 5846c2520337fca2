"""The web server ``manage.py up`` and the Helm chart run (gunicorn with uvicorn workers, the
httptools parser), with its own refusals as Kubernetes ``Status`` objects: what the server
refuses before Django sees the request (a request line too long, a malformed request) used to
be uvicorn's plain-text 400, which clients cannot read as a Status.

The request target (path and query) may be at most ``MAX_REQUEST_TARGET_BYTES``: httptools'
URL parser keeps offsets in 16 bits, so a longer one cannot be parsed at all. Longer is a 414
Status (a 100 KB ``labelSelector``); kube-apiserver's own bound is 1 MiB of request line and
headers, but no selector a person or a controller writes comes near 64 KiB.
"""

from __future__ import annotations

import asyncio
import http
import json
import ssl
from asyncio import sslproto
from typing import Any, cast

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

from portal.machinery.errors import StatusError

MAX_REQUEST_TARGET_BYTES = 65535


class RequestTargetTooLong(Exception):
    """Raised inside the parser's URL callback; the parser then reports an error."""


def status_response(error: StatusError) -> bytes:
    """A whole HTTP/1.1 response carrying ``error`` as a Status, closing the connection."""
    body = json.dumps(error.to_status()).encode()
    phrase = http.HTTPStatus(error.code).phrase
    head = (
        f"HTTP/1.1 {error.code} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class StatusHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing with a Status."""

    target_too_long = False

    def on_url(self, url: bytes) -> None:
        if len(self.url) + len(url) > MAX_REQUEST_TARGET_BYTES:
            self.target_too_long = True
            raise RequestTargetTooLong
        super().on_url(url)

    def send_400_response(self, msg: str) -> None:
        if self.target_too_long:
            error = StatusError(
                414,
                "RequestURITooLong",
                f"the request target is longer than {MAX_REQUEST_TARGET_BYTES} bytes",
            )
        else:
            error = StatusError(400, "BadRequest", "the request is not valid HTTP/1.1")
        self.transport.write(status_response(error))
        self.transport.close()


TLS_HANDSHAKE = 0x16  # the first byte of a TLS record carrying a ClientHello
FIRST_BYTE_SECONDS = 60.0  # a connection that sends nothing is closed after this
HTTPS_ONLY = StatusError(400, "BadRequest", "Client sent an HTTP request to an HTTPS server.")


class TlsOrPlain(asyncio.Protocol):
    """The protocol of a TLS server's new connection until its first bytes say what it is.

    A TLS record (a ClientHello) goes, with those bytes, to asyncio's TLS protocol, which hands
    the secured connection to :class:`StatusHttpToolsProtocol` once the handshake is done;
    anything else (plain HTTP sent to the HTTPS port) is answered with a 400 Status saying so,
    as kube-apiserver answers it, instead of a connection closed without a word."""

    def __init__(
        self,
        config: Config,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.config, self.server_state, self.app_state = config, server_state, app_state
        self.loop = _loop or asyncio.get_event_loop()
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods
        self.transport = cast(asyncio.Transport, transport)
        self.timer = self.loop.call_later(FIRST_BYTE_SECONDS, self.transport.close)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.connection_lost(None)  # the timer
        if data[0] != TLS_HANDSHAKE:
            self.transport.write(status_response(HTTPS_ONLY))
            self.transport.close()
            return
        http = StatusHttpToolsProtocol(
            config=self.config,
            server_state=self.server_state,
            app_state=self.app_state,
            _loop=self.loop,
        )
        secured = sslproto.SSLProtocol(
            self.loop,
            http,
            TLS_CONTEXTS[id(self.config)],
            None,
            server_side=True,
            call_connection_made=True,
        )
        self.transport.set_protocol(secured)
        secured.connection_made(self.transport)
        buffer = secured.get_buffer(len(data))
        buffer[: len(data)] = data
        secured.buffer_updated(len(data))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


# each worker's TLS context, by its Config: taken off the Config so uvicorn listens in plain
# TCP and TlsOrPlain decides per connection
TLS_CONTEXTS: dict[int, ssl.SSLContext] = {}


class StatusUvicornWorker(UvicornWorker):
    """gunicorn's uvicorn worker with the protocol above; with TLS, each connection's first
    byte is looked at first (``TlsOrPlain``)."""

    CONFIG_KWARGS: dict[str, Any] = {
        **UvicornWorker.CONFIG_KWARGS,
        "http": "portal.web_server:StatusHttpToolsProtocol",
    }

    async def _serve(self) -> None:
        self.config.app = self.wsgi  # what the base class sets before loading the config
        if not self.config.loaded:
            self.config.load()
        if self.config.ssl is not None:
            TLS_CONTEXTS[id(self.config)] = self.config.ssl
            self.config.ssl = None
            self.config.http_protocol_class = TlsOrPlain
        await super()._serve()
