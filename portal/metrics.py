"""``/metrics`` for Prometheus. Under ``manage.py up`` the web and worker processes share
``PROMETHEUS_MULTIPROC_DIR``, so web serves what the control worker counted.

Served as kube-apiserver serves its own: to a user allowed ``get`` on the non-resource URL
``/metrics`` (a ClusterRole rule ``nonResourceURLs: ["/metrics"]``), a 401 Status without
credentials and a 403 Status without the grant; ``KRUNTIMES_METRICS_ANONYMOUS=true`` opens it
to anyone (a scraper that sends no token)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request

from portal.auth.authorizer import review_non_resource
from portal.machinery import errors
from portal.machinery.views import KubeView

PATH = "/metrics"


def registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        collected = CollectorRegistry()
        multiprocess.MultiProcessCollector(collected)
        return collected
    return REGISTRY


class MayGetMetrics(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            raise errors.unauthorized()
        decision = review_non_resource(request.user, "get", PATH)
        if not decision.allowed:
            raise errors.StatusError(
                403,
                "Forbidden",
                f'forbidden: User "{request.user.get_username()}" cannot get path "{PATH}"',
            )
        return True


class _StatusAsJSON(BaseContentNegotiation):
    """Whatever a scraper accepts: the metrics are their own text, a refusal a JSON Status."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return JSONRenderer(), JSONRenderer.media_type


class MetricsView(KubeView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _StatusAsJSON
    schema = None  # not part of /api/schema/

    def get_permissions(self) -> list[BasePermission]:
        if settings.KRUNTIMES_METRICS_ANONYMOUS:
            return [AllowAny()]
        return [MayGetMetrics()]

    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


metrics_view = MetricsView.as_view()
