"""A long-lived server process, once it has loaded what it serves, keeps what it loaded out of
Python's cyclic collector.

A web process holds a few hundred thousand objects from its imports (Django, DRF, the
admin, the kinds, their serializers and URLconf) that live as long as it does. A request that
builds hundreds of objects' manifests allocates enough to trigger full collections, and each
walked them all: a 100 ms pause in a list request every few, its p99 (``bench api``). Frozen
(``gc.freeze``, as the Python documentation suggests for a server after start-up), they are
never walked again; what requests allocate is collected as before.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Import every view the URLconf names (Django does that at the first request), then
    collect once and freeze what survives."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the import is the point
    gc.collect()
    gc.freeze()
