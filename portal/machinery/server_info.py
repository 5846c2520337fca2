"""What kube-apiserver answers without authentication: ``/version`` (client-go and the Python
``DynamicClient`` ask it first) and the health probes ``/healthz``, ``/livez``, ``/readyz``
(``ok`` as text; ``/readyz`` also reaches the database)."""

from __future__ import annotations

import logging
import platform
import sys
from functools import cache
from importlib import metadata

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)
# The Kubernetes API level the served shapes follow; kubectl compares it with its own.
KUBERNETES_MAJOR = "1"
KUBERNETES_MINOR = "31"
PROJECT = "kruntimes-portal"


def project_version() -> str:
    try:
        return metadata.version(PROJECT)
    except metadata.PackageNotFoundError:
        return "0.0.0"


@cache
def version_info() -> dict[str, str]:
    """version.Info as kube-apiserver serves it; gitVersion is semver with the project's
    version as build metadata, as client-go parses it."""
    build = project_version().replace("_", "-").replace("+", ".")
    return {
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0-kruntimes+{build}",
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": sys.implementation.name,
        "platform": f"{sys.platform}/{platform.machine().lower()}",
    }


def version(request: HttpRequest) -> JsonResponse:
    return JsonResponse(version_info())


def ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain; charset=utf-8")


def readyz(request: HttpRequest) -> HttpResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        log.exception("readyz: the database does not answer")
        return HttpResponse(
            "[-]database failed\nreadyz check failed",
            status=500,
            content_type="text/plain; charset=utf-8",
        )
    return ok(request)
