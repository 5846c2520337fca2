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

import http
import json
from typing import Any

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


class StatusUvicornWorker(UvicornWorker):
    """gunicorn's uvicorn worker with the protocol above."""

    CONFIG_KWARGS: dict[str, Any] = {
        **UvicornWorker.CONFIG_KWARGS,
        "http": "portal.web_server:StatusHttpToolsProtocol",
    }
