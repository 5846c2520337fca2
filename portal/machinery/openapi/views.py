"""``/openapi/v3`` and ``/openapi/v3/<group-version>``, served as kube-apiserver serves them:
JSON (a client asking only for protobuf gets 406), an ETag honoured by If-None-Match, and a
``?hash=`` URL that is cacheable for good (a stale hash is redirected to the current one).

Readable by any authenticated user, like the discovery documents under ``/apis``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.http import HttpResponse, HttpResponseBase, HttpResponsePermanentRedirect
from django.urls import URLPattern, path, re_path
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from .. import errors
from ..routes import NotFoundView
from ..views import KubeView
from .documents import Rendered, rendered_group_version, rendered_index
from .v2 import OpenAPIV2View

CACHE_FOR = timedelta(days=365)


def _serve(request: Request, rendered: Rendered, *, cacheable: bool = False) -> HttpResponseBase:
    etag = f'"{rendered.etag}"'
    not_modified = get_conditional_response(request, etag=etag)
    response = not_modified or HttpResponse(rendered.body, content_type="application/json")
    response["ETag"] = etag
    response["Vary"] = "Accept"
    if cacheable:
        response["Cache-Control"] = "public, immutable"
        response["Expires"] = http_date((datetime.now(UTC) + CACHE_FOR).timestamp())
    return response


class OpenAPIView(KubeView):
    renderer_classes = [JSONRenderer]
    schema = None  # not itself part of /api/schema/


class OpenAPIV3IndexView(OpenAPIView):
    def get(self, request: Request) -> HttpResponseBase:
        return _serve(request, rendered_index())


class OpenAPIV3DocumentView(OpenAPIView):
    def get(self, request: Request, group_version: str, **kwargs: Any) -> HttpResponseBase:
        group, version = _split(group_version)
        rendered = rendered_group_version(group, version)
        if rendered is None:
            raise errors.StatusError(404, "NotFound", f"no OpenAPI document for {group_version}")
        asked = request.query_params.get("hash")
        if asked and asked != rendered.etag:
            return HttpResponsePermanentRedirect(
                f"/openapi/v3/{group_version}?hash={rendered.etag}"
            )
        return _serve(request, rendered, cacheable=bool(asked))


def _split(group_version: str) -> tuple[str, str]:
    parts = group_version.split("/")
    if parts[0] == "api" and len(parts) == 2:
        return "", parts[1]
    if parts[0] == "apis" and len(parts) == 3:
        return parts[1], parts[2]
    return "-", "-"  # served by no kind: a 404


def openapi_urlpatterns() -> list[URLPattern]:
    return [
        path("openapi/v2", OpenAPIV2View.as_view()),
        path("openapi/v3", OpenAPIV3IndexView.as_view()),
        re_path(r"^openapi/v3/(?P<group_version>apis?/.+)$", OpenAPIV3DocumentView.as_view()),
        re_path(r"^openapi(/.*)?$", NotFoundView.as_view()),
    ]
