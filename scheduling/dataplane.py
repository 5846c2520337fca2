"""The shared secret between the function gateway and runtimed's dataplane.

runtimed is authorization-agnostic: it serves an invocation to whoever shows this key (and
names the attempt and pod incarnation it serves); the gateway shows it only after it
authenticated the caller and authorized ``runs/invoke``. Providers hand it to runtimed as
``KRUNTIME_DATAPLANE_KEY``.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def key() -> str:
    """``KRUNTIMES_DATAPLANE_KEY``, or a key derived from ``SECRET_KEY`` (the same in every
    process of one installation, and useless for anything else)."""
    configured = str(getattr(settings, "KRUNTIMES_DATAPLANE_KEY", "") or "")
    if configured:
        return configured
    secret = str(settings.SECRET_KEY).encode()
    return hmac.new(secret, b"kruntimes.io/dataplane", hashlib.sha256).hexdigest()
