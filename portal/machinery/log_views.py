"""A ``<plural>/log`` subresource view, like ``pods/log``: text, a follow streamed in one of the
web process's stream slots (``portal.machinery.streams``; past the limits a 429), and every
failure a Kubernetes ``Status`` even when the client asked for text. Each kind's view reads its
own log; the query parameters are parsed here the way kubectl sends them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from . import errors, streams
from .views import KubeView

TEXT_PLAIN = "text/plain; charset=utf-8"
TRUE = ("1", "t", "T", "true", "TRUE", "True")  # Go's strconv.ParseBool, as kubectl sends it
FALSE = ("0", "f", "F", "false", "FALSE", "False")


class PlainTextRenderer(BaseRenderer):
    """Lets ``Accept: text/plain`` through negotiation; the view returns text itself."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> Any:
        return data if isinstance(data, (str, bytes)) else str(data)


class BadQuery(ValueError):
    """A log query parameter that is not what it must be; the message names it."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name} {message}")
        self.name = name
        self.detail = message


def query_int(params: Mapping[str, Any], name: str, minimum: int) -> int | None:
    """An optional integer query parameter, at least ``minimum``; raises BadQuery."""
    value = params.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < minimum:
        raise BadQuery(name, f"must be an integer >= {minimum}")
    return number


def parse_bool(params: Mapping[str, Any], name: str) -> bool:
    value = params.get(name)
    if value in (None, ""):
        return False
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise errors.bad_request(
        f'invalid {name} "{value}"', [errors.invalid(name, "must be true or false")]
    )


def parse_int(params: Mapping[str, Any], name: str, minimum: int) -> int | None:
    try:
        return query_int(params, name, minimum)
    except BadQuery as exc:
        raise errors.bad_request(
            f'invalid {name} "{params.get(name)}"', [errors.invalid(name, exc.detail)]
        ) from None


class TextLogView(KubeView):
    """A ``<plural>/log`` subresource: text, a follow streamed in one of the process's stream
    slots, and every failure a JSON Status even when the client asked for text."""

    subresource = "log"
    http_method_names = ["get", "options"]
    renderer_classes = [JSONRenderer, PlainTextRenderer]

    def follow_response(self, request: Request, content: Iterable[bytes]) -> StreamingHttpResponse:
        release = streams.acquire(request.user.get_username())  # or a 429 Status
        response = streams.SlotStreamingResponse(content, release=release, content_type=TEXT_PLAIN)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # a proxy must not hold the stream back
        return response

    def handle_exception(self, exc: Exception) -> Response:
        # a Status is JSON even when the client asked for text/plain
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)
