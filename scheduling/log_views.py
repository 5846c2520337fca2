"""``GET .../namespaces/<ns>/runs/<name>/log``: a Run's output as text, like ``pods/log``.

Authorized as the ``runs/log`` subresource with verb ``get``. ``follow=true`` streams: the view
polls the stored chunks and ends once the attempt is over and quiet (``logs.follow_log``); a
follow takes one of the web process's stream slots (``portal.machinery.streams``), and past
the limits it is a 429.
Every failure is a Kubernetes ``Status``, even when the client asked for text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from django.db import DatabaseError
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer

from portal.machinery import errors, store, streams
from portal.machinery.registry import registry
from portal.machinery.views import KubeView
from scheduling import logs
from scheduling.models import Run

log = logging.getLogger(__name__)
TEXT_PLAIN = "text/plain; charset=utf-8"
TRUE = ("1", "t", "T", "true", "TRUE", "True")  # Go's strconv.ParseBool, as kubectl sends it
FALSE = ("0", "f", "F", "false", "FALSE", "False")


class PlainTextRenderer(BaseRenderer):
    """Lets ``Accept: text/plain`` through negotiation; the view returns text itself."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, (str, bytes)) else str(data)


def parse_bool(params, name: str) -> bool:
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


def parse_int(params, name: str, minimum: int) -> int | None:
    try:
        return logs.query_int(params, name, minimum)
    except logs.BadQuery as exc:
        raise errors.bad_request(
            f'invalid {name} "{params.get(name)}"', [errors.invalid(name, exc.detail)]
        ) from None


def check_attempt(run: Run, attempt: int | None) -> int:
    if attempt is None:
        return run.attempt
    if attempt > run.attempt:
        raise errors.bad_request(
            f'attempt {attempt} of Run "{run.name}" does not exist: the Run is at attempt '
            f"{run.attempt}",
            [errors.invalid("attempt", f"must be at most {run.attempt}")],
        )
    return attempt


def encoded_stream(pieces: Iterable[str]) -> Iterator[bytes]:
    """The follow stream as bytes; a storage failure mid-stream ends it (headers are sent)."""
    try:
        for piece in pieces:
            yield piece.encode()
    except DatabaseError:
        log.exception("following a Run log failed; ending the stream")


LOG_PARAMETERS = [
    OpenApiParameter("follow", bool, description="stream new output until the attempt ends"),
    OpenApiParameter("attempt", int, description="which attempt (default: the current one)"),
    OpenApiParameter("tailLines", int, description="only the last lines"),
    OpenApiParameter("limitBytes", int, description="at most this many bytes of text"),
]


class TextLogView(KubeView):
    """A ``<plural>/log`` subresource: text, a follow streamed in one of the process's stream
    slots, and every failure a JSON Status even when the client asked for text."""

    subresource = "log"
    http_method_names = ["get", "options"]
    renderer_classes = [JSONRenderer, PlainTextRenderer]

    def follow_response(self, request, content: Iterable[bytes]) -> StreamingHttpResponse:
        release = streams.acquire(request.user.get_username())  # or a 429 Status
        response = streams.SlotStreamingResponse(content, release=release, content_type=TEXT_PLAIN)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # a proxy must not hold the stream back
        return response

    def handle_exception(self, exc):
        # a Status is JSON even when the client asked for text/plain
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class RunLogView(TextLogView):
    follow_policy = logs.DEFAULT_FOLLOW  # tests inject a zero poll interval

    @property
    def kind(self):
        return registry.for_model(Run)

    @extend_schema(
        operation_id="readRunLog",
        parameters=LOG_PARAMETERS,
        responses={(200, "text/plain"): OpenApiTypes.STR},
        tags=["kruntimes.io/v1alpha1"],
    )
    def get(self, request, namespace: str, name: str):
        self.authorize(request, "get", namespace, name)
        params = request.query_params
        follow = parse_bool(params, "follow")
        attempt = parse_int(params, "attempt", 1)
        tail_lines = parse_int(params, "tailLines", 0)
        limit_bytes = parse_int(params, "limitBytes", 1)
        run = store.get_object(self.kind, namespace, name)
        attempt = check_attempt(run, attempt)
        if follow:
            pieces = logs.follow_log(
                run,
                attempt,
                tail_lines=tail_lines,
                limit_bytes=limit_bytes,
                policy=self.follow_policy,
                idle_pieces=True,  # lets an ASGI server end it between polls (streams.py)
            )
            return self.follow_response(request, encoded_stream(pieces))
        piece = logs.read_log(run, attempt, tail_lines=tail_lines, limit_bytes=limit_bytes)
        return HttpResponse(piece.text.encode(), content_type=TEXT_PLAIN)
