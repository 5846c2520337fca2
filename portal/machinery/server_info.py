"""What kube-apiserver answers without authentication: ``/version`` (client-go and the Python
``DynamicClient`` ask it first) and the health probes ``/healthz``, ``/livez``, ``/readyz``
(``ok`` as text; ``/readyz`` also reaches the database)."""

from __future__ import annotations

import logging
import platform
import re
import sys
from importlib import metadata

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)
PROJECT = "kruntimes-portal"
MAJOR_MINOR = re.compile(r"^(\d+)\.(\d+)$")


def project_version() -> str:
    try:
        return metadata.version(PROJECT)
    except metadata.PackageNotFoundError:
        return "0.0.0"


def emulated_version() -> tuple[int, int]:
    """The Kubernetes API level the served shapes follow (``KRUNTIMES_KUBERNETES_VERSION``,
    ``MAJOR.MINOR``): kubectl compares it with its own minor and warns beyond one apart."""
    value = str(getattr(settings, "KRUNTIMES_KUBERNETES_VERSION", ""))
    match = MAJOR_MINOR.match(value)
    if not match or int(match[2]) < 1:
        raise ImproperlyConfigured(
            f"KRUNTIMES_KUBERNETES_VERSION must be MAJOR.MINOR such as 1.37, not {value!r}"
        )
    return int(match[1]), int(match[2])


def version_info() -> dict[str, str]:
    """version.Info as kube-apiserver (1.33+) serves it: gitVersion is semver with the
    project's version as build metadata, as client-go parses it; the emulation version is
    the binary's, and the minimum compatibility one minor below, as kube's defaults are."""
    major, minor = emulated_version()
    build = project_version().replace("_", "-").replace("+", ".")
    return {
        "major": str(major),
        "minor": str(minor),
        "emulationMajor": str(major),
        "emulationMinor": str(minor),
        "minCompatibilityMajor": str(major),
        "minCompatibilityMinor": str(minor - 1),
        "gitVersion": f"v{major}.{minor}.0-kruntimes+{build}",
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
