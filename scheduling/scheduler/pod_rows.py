"""The Runtime Pods a pass schedules onto, read as text and parsed only where they changed.

A pass reads every pod row (a thousand pods is a thousand rows each pass). Converting a
timestamp with its time zone, a UUID and a JSON document per row cost more than the query;
here the columns come back as text, the capacity is parsed once per distinct document and a
heartbeat once per distinct value, so a pass pays for the rows and little else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from django.db.models import CharField, QuerySet, TextField
from django.db.models.functions import Cast

from scheduling.models import RuntimePod

from .snapshot import PodState


@lru_cache(maxsize=1024)
def capacity(text: str | None) -> tuple[tuple[str, Any], ...]:
    return tuple((json.loads(text) or {}).items()) if text else ()


@lru_cache(maxsize=16384)
def _time(text: str | None) -> datetime | None:
    """A timestamp column's text (PostgreSQL: ``2026-12-01 10:00:00.5+00``; SQLite: naive UTC)."""
    if not text:
        return None
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def signature(pods: list[PodState], stale: Callable[[PodState], bool]) -> tuple[Hashable, ...]:
    """What the pods offer, less the heartbeat times (which change every few seconds) but
    with whether each heartbeat is stale (``Snapshot.stale``): equal signatures place the
    same Runs."""
    return tuple(
        (
            pod.pk,
            pod.uid,
            pod.ready,
            pod.phase,
            tuple(sorted(pod.capacity.items())),
            stale(pod),
        )
        for pod in pods
    )


def read_pods(query: QuerySet[RuntimePod]) -> list[PodState]:
    """The pods of ``query``, as a pass works on them."""
    rows = query.values_list(
        "pk",
        "namespace",
        "runtime",
        "name",
        Cast("uid", CharField()),
        "ready",
        "phase",
        Cast("last_heartbeat", CharField()),
        Cast("capacity", TextField()),
    )
    return [
        PodState(
            namespace=namespace,
            runtime=runtime,
            name=name,
            uid=uid_text(uid),
            pk=pk,
            ready=bool(ready),
            phase=phase,
            last_heartbeat=_time(heartbeat),
            capacity=dict(capacity(capacity_text)),
        )
        for pk, namespace, runtime, name, uid, ready, phase, heartbeat, capacity_text in rows
    ]


def uid_text(text: str) -> str:
    """The uid as ``str(uuid.UUID)`` writes it (SQLite keeps 32 hex digits, no dashes)."""
    if len(text) == 32:
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return text
