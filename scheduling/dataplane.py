"""The shared secret between the function gateway and runtimed's dataplane, one per namespace.

runtimed is authorization-agnostic: it serves an invocation to whoever shows its key (and names
the attempt and pod incarnation it serves); the gateway shows it only after it authenticated
the caller and authorized ``runs/invoke``. Providers hand it to runtimed as
``KRUNTIME_DATAPLANE_KEY``. Each namespace's Runtime Pods get a key of their own, derived from
the installation's secret: whoever can read a namespace's Deployments (where a Kubernetes
Runtime Pod's key is) can call only that namespace's pods directly, never another's.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def key(namespace: str) -> str:
    """The dataplane key of ``namespace``'s Runtime Pods: HMAC-SHA256 of the namespace under
    ``KRUNTIMES_DATAPLANE_KEY`` (or, when unset, ``SECRET_KEY``), the same in every process of
    one installation."""
    secret = str(getattr(settings, "KRUNTIMES_DATAPLANE_KEY", "") or settings.SECRET_KEY)
    message = f"kruntimes.io/dataplane/{namespace}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
