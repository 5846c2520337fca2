"""Where a Ready function Run is invoked: ``status.endpoint``.

The gateway (``scheduling.gateway``) serves ``POST <base>/v1/namespaces/<ns>/runs/<name>/<uid>/
invoke`` on the portal's own HTTPS address, ``KRUNTIMES_GATEWAY_URL`` (``manage.py up --tls``
sets it to the URL it serves). The path names the Run's UID, so a Run created again under the
same name is never reached through an old endpoint. Callers send bearer tokens: without TLS no
endpoint is published (the function is Ready all the same, and its Ready condition says why).
``caBundle`` is the PEM of the CA that signed the portal's certificate when it is the portal's
own (``KRUNTIMES_GATEWAY_CA_FILE``), so a client need not trust it system-wide.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings

from scheduling.gateway.paths import invoke_path

log = logging.getLogger(__name__)

MAX_CA_BUNDLE = 16384
NO_TLS = (
    "the function is registered and serves invocations; no endpoint is published because the "
    "portal does not serve HTTPS (KRUNTIMES_GATEWAY_URL)"
)


def base_url() -> str:
    return str(getattr(settings, "KRUNTIMES_GATEWAY_URL", "") or "").rstrip("/")


def ca_bundle() -> str:
    path = str(getattr(settings, "KRUNTIMES_GATEWAY_CA_FILE", "") or "")
    if not path:
        return ""
    try:
        pem = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("the gateway CA %s cannot be read: %s", path, exc)
        return ""
    return pem if len(pem) <= MAX_CA_BUNDLE else ""


def endpoint(namespace: str, name: str, uid: str) -> dict[str, str] | None:
    """The endpoint to publish, or None when the portal does not serve HTTPS."""
    base = base_url()
    if not base.startswith("https://"):
        return None
    url = base + invoke_path(namespace, name, uid)
    if len(url) > 2048:
        return None
    published = {"protocol": "HTTPS", "url": url}
    bundle = ca_bundle()
    if bundle:
        published["caBundle"] = bundle
    return published
