"""What an invoke request says besides its path: the headers the gateway reads (one pass over
them), the invocation ID, the timeout, and the body, read with its size limit enforced as it
arrives (a body over the limit is refused before more of it is held)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from portal.machinery import errors
from runtimed.protocol import (
    DEFAULT_INVOKE_TIMEOUT_SECONDS,
    INVOCATION_ID_HEADER,
    MAX_INVOCATION_ID_BYTES,
    MAX_INVOKE_BYTES,
    MAX_INVOKE_TIMEOUT_SECONDS,
)

from .failures import failure

TIMEOUT_HEADER = "X-Kruntime-Timeout"
DEFAULT_CONTENT_TYPE = "application/json"
MAX_CONTENT_TYPE_BYTES = 256
_INVOCATION = INVOCATION_ID_HEADER.lower().encode()
_TIMEOUT = TIMEOUT_HEADER.lower().encode()
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class ClientGone(Exception):
    """The caller disconnected before its body was read: nobody to answer."""


@dataclass(slots=True)
class Headers:
    authorization: bytes | None = None
    content_type: bytes | None = None
    content_length: bytes | None = None
    invocation_id: bytes | None = None
    timeout: bytes | None = None
    impersonates: bool = False


def read_headers(raw: Iterable[tuple[bytes, bytes]]) -> Headers:
    """The headers the gateway reads (ASGI gives their names in lower case)."""
    found = Headers()
    for name, value in raw:
        if name == b"authorization":
            found.authorization = value
        elif name == b"content-type":
            found.content_type = value
        elif name == b"content-length":
            found.content_length = value
        elif name == _INVOCATION:
            found.invocation_id = value
        elif name == _TIMEOUT:
            found.timeout = value
        elif name.startswith(b"impersonate-"):
            found.impersonates = True
    return found


def _printable(value: bytes) -> bool:
    return all(0x21 <= byte <= 0x7E for byte in value)


def invocation_id(value: bytes | None) -> str:
    """The caller's invocation ID, or a fresh one; a 400 failure when it is unusable (the
    failure still needs an ID: ``new_invocation_id`` gives it)."""
    if not value:
        return new_invocation_id()
    if len(value) > MAX_INVOCATION_ID_BYTES or not _printable(value):
        raise failure(
            400,
            f"invalid {INVOCATION_ID_HEADER} header: at most {MAX_INVOCATION_ID_BYTES} bytes of "
            "printable ASCII",
            causes=[
                errors.invalid(
                    INVOCATION_ID_HEADER,
                    f"must be 1-{MAX_INVOCATION_ID_BYTES} printable ASCII characters",
                )
            ],
        )
    return value.decode("ascii")


def new_invocation_id() -> str:
    return str(uuid.uuid4())


def query_timeout(query_string: bytes) -> bytes | None:
    """The last ``timeout`` parameter of the query (as the API reads its parameters)."""
    if not query_string or b"timeout" not in query_string:
        return None
    from urllib.parse import parse_qsl

    found = None
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key == "timeout":
            found = value.encode("latin-1")
    return found


def timeout_seconds(query: bytes | None, header: bytes | None) -> float:
    """The invocation's timeout: ``?timeout=`` (or the header) as seconds or a duration
    (``1500ms``, ``30s``, ``2m``), at most MAX_INVOKE_TIMEOUT_SECONDS (longer is cut to it),
    DEFAULT_INVOKE_TIMEOUT_SECONDS when not given."""
    raw, field = (query, "timeout") if query is not None else (header, TIMEOUT_HEADER)
    if raw is None:
        return float(DEFAULT_INVOKE_TIMEOUT_SECONDS)
    text = raw.decode("latin-1").strip()
    match = _DURATION.match(text)
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else 0.0
    if seconds < 0.001:
        raise failure(
            400,
            f'invalid {field} "{text[:64]}": a positive duration such as 30s, 1500ms or 2m',
            causes=[errors.invalid(field, "must be a positive duration (30s, 1500ms, 2m)")],
        )
    return min(seconds, float(MAX_INVOKE_TIMEOUT_SECONDS))


def content_type(value: bytes | None) -> str:
    if not value:
        return DEFAULT_CONTENT_TYPE
    if len(value) > MAX_CONTENT_TYPE_BYTES or not all(0x20 <= b <= 0x7E for b in value):
        raise failure(
            400,
            "invalid Content-Type header",
            causes=[errors.invalid("Content-Type", "must be a media type of printable ASCII")],
        )
    return value.decode("ascii")


def too_large() -> Exception:
    return failure(
        413,
        f"the request body is larger than the limit of {MAX_INVOKE_BYTES} bytes",
    )


def declared_length(value: bytes | None) -> None:
    """Refuse at once a body whose Content-Length is over the limit."""
    if value is None:
        return
    try:
        length = int(value)
    except ValueError:
        raise failure(
            400, "invalid Content-Length header", causes=[errors.invalid("Content-Length", "")]
        ) from None
    if length > MAX_INVOKE_BYTES:
        raise too_large()


async def read_body(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> bytes:
    """The whole body, refused (413) as soon as more than MAX_INVOKE_BYTES of it arrived."""
    first = await receive()
    if first["type"] == "http.disconnect":
        raise ClientGone
    body = first.get("body", b"")
    if len(body) > MAX_INVOKE_BYTES:
        raise too_large()
    if not first.get("more_body"):
        return bytes(body)
    held = bytearray(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        held += message.get("body", b"")
        if len(held) > MAX_INVOKE_BYTES:
            raise too_large()
        if not message.get("more_body"):
            return bytes(held)
