"""``/api/schema/`` (drf-spectacular's OpenAPI document, YAML or JSON): served only to
authenticated users, as kube-apiserver serves ``/openapi/v3``, and generated once per process
per format (about a megabyte and a second and a half of work each time before), with an ETag
honoured by If-None-Match.

The document does not depend on who asks (spectacular's ``SERVE_PUBLIC``), so one copy serves
everyone."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from django.http import HttpResponse, HttpResponseBase
from django.utils.cache import get_conditional_response
from django.utils.module_loading import import_string
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from ..registry import registry
from ..views import status_exception_handler
from .documents import Rendered


@lru_cache(maxsize=4)
def _schema(kinds: int) -> dict[str, Any]:
    schema: dict[str, Any] = SchemaGenerator().get_schema(  # type: ignore[no-untyped-call]
        request=None, public=True
    )
    return schema


@lru_cache(maxsize=8)
def _rendered(renderer_path: str, kinds: int) -> Rendered:
    renderer_class = import_string(renderer_path)
    body = renderer_class().render(_schema(kinds), renderer_context={})
    return Rendered(body, hashlib.sha256(body).hexdigest())


def rendered_schema(renderer_class: type[BaseRenderer]) -> Rendered:
    # the kind count keys the cache: a kind registered later (a test's) renders afresh
    path = f"{renderer_class.__module__}.{renderer_class.__qualname__}"
    return _rendered(path, len(registry.kinds))


class APISchemaView(SpectacularAPIView):
    authentication_classes = api_settings.DEFAULT_AUTHENTICATION_CLASSES
    permission_classes = [IsAuthenticated]
    schema = None  # not itself part of the document

    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        renderer = request.accepted_renderer
        rendered = rendered_schema(type(renderer))
        etag = f'"{rendered.etag}"'
        charset = f"; charset={renderer.charset}" if renderer.charset else ""
        response = get_conditional_response(request, etag=etag) or HttpResponse(
            rendered.body, content_type=f"{renderer.media_type}{charset}"
        )
        response["ETag"] = etag
        response["Vary"] = "Accept"
        return response

    def handle_exception(self, exc: Exception) -> Response:
        response = status_exception_handler(exc, self.get_exception_handler_context())
        # a Status is JSON whichever schema format was asked for
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = "application/json"
        return response
