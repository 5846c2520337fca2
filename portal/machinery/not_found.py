"""Every path no route matched is a ``Status`` 404, as kube-apiserver answers, never Django's
HTML page; the console's paths (``/admin/``, static files) keep theirs.

A middleware rather than a catch-all route, so no route added later is shadowed by it."""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import sync_and_async_middleware

from .errors import StatusError

HTML_PREFIXES = ("/admin/", "/static/")


def not_found_status() -> JsonResponse:
    error = StatusError(404, "NotFound", "the server could not find the requested resource")
    return JsonResponse(error.to_status(), status=404)


def _unrouted(request: HttpRequest, response: HttpResponse) -> bool:
    return (
        response.status_code == 404
        and getattr(request, "resolver_match", None) is None
        and not request.path.startswith(HTML_PREFIXES)
    )


@sync_and_async_middleware
def status_not_found_middleware(get_response: Any) -> Any:
    """Sync and async alike, so the ASGI chain takes no extra thread hop for it."""
    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            response = await get_response(request)
            return not_found_status() if _unrouted(request, response) else response

    else:

        def middleware(request: HttpRequest) -> HttpResponse:  # type: ignore[misc]
            response = get_response(request)
            return not_found_status() if _unrouted(request, response) else response

    return middleware
