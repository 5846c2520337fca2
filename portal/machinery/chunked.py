"""Request bodies sent with ``Transfer-Encoding: chunked`` (no Content-Length) are read, as
kube-apiserver reads them, instead of being taken for empty.

Django and DRF size a body by its Content-Length: without one, DRF reads nothing (a WorkflowRun
start silently used its default inputs; a Run create said "name is required"). The servers this
project runs decode chunked framing themselves and mark where the body ends: uvicorn (``manage.py
up``, the Helm chart) hands Django the whole body, gunicorn's WSGI workers (the Docker image)
set ``wsgi.input_terminated``. This middleware reads such a body (bounded by
``KRUNTIMES_MAX_REQUEST_BYTES``, 413 beyond) and gives it its length. Under a server that cannot
say where a chunked body ends (wsgiref: ``runserver``, the test live server) it answers 411
Length Required rather than read an empty body.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse

from . import errors
from .decoding import max_request_bytes, too_large


def _is_chunked(request: HttpRequest) -> bool:
    encoding = request.META.get("HTTP_TRANSFER_ENCODING", "")
    return "chunked" in encoding.lower() and not request.META.get("CONTENT_LENGTH")


def _terminated_input(request: HttpRequest) -> Any | None:
    """A stream of the decoded body that ends where the body ends, if the server gave one."""
    if isinstance(request, ASGIRequest):
        return request._stream  # the ASGI handler has received the whole body
    environ = getattr(request, "environ", None) or {}
    if environ.get("wsgi.input_terminated"):
        return environ["wsgi.input"]
    return None


def _status(error: errors.StatusError) -> HttpResponse:
    return JsonResponse(error.to_status(), status=error.code)


def read_chunked_body(request: HttpRequest) -> HttpResponse | None:
    """Give a chunked body its length (None), or the Status answering the request."""
    stream = _terminated_input(request)
    if stream is None:
        return _status(
            errors.StatusError(
                411,
                "LengthRequired",
                "this server cannot read a chunked request body: send Content-Length",
            )
        )
    limit = max_request_bytes()
    body = stream.read(limit + 1)
    if len(body) > limit:
        return _status(too_large(limit))
    request._stream = io.BytesIO(body)
    request._read_started = False  # type: ignore[attr-defined]
    request.META["CONTENT_LENGTH"] = str(len(body))
    return None


def chunked_body_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if _is_chunked(request):
            refusal = read_chunked_body(request)
            if refusal is not None:
                return refusal
        return get_response(request)

    return middleware
