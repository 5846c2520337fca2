"""``GET .../namespaces/<ns>/runs/<name>/log``: a Run's output as text, like ``pods/log``.

Authorized as the ``runs/log`` subresource with verb ``get``. ``follow=true`` streams: the view
polls the stored chunks and ends once the attempt is over and quiet (``logs.follow_log``); the
rest (stream slots, Status on failure, query parsing) is ``portal.machinery.log_views``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from portal.machinery import errors, store
from portal.machinery.log_views import TEXT_PLAIN, TextLogView, parse_bool, parse_int
from portal.machinery.registry import registry
from scheduling import logs
from scheduling.models import Run

log = logging.getLogger(__name__)


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
