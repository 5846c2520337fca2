"""``/metrics`` for Prometheus. Under ``manage.py up`` the web and worker processes share
``PROMETHEUS_MULTIPROC_DIR``, so web serves what the control worker counted."""

from __future__ import annotations

import os

from django.http import HttpResponse
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_LATEST


def registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        collected = CollectorRegistry()
        multiprocess.MultiProcessCollector(collected)
        return collected
    return REGISTRY


def metrics_view(request) -> HttpResponse:
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
