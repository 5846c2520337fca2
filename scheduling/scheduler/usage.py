"""What active Runs use, summed in SQL: one row per (pod, distinct requests) with a count,
so reading usage costs about one row per pod however many Runs are placed."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from django.db.models import Count, QuerySet

from scheduling import resources
from scheduling.models import ACTIVE_PHASES, Run


@lru_cache(maxsize=4096)
def _parsed(requests_json: str) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    requests, fractional = resources.run_requests(
        {"resources": {"requests": json.loads(requests_json)}}
    )
    return tuple(requests.items()), tuple(fractional)


def run_requests(raw: dict[str, Any] | None) -> tuple[dict[str, int], list[str]]:
    """``resources.run_requests`` of a Run's ``requests`` column, parsed once per distinct
    value (a backlog has few; key order is kept, Filter reasons follow it); the caller owns
    the returned dict and list."""
    requests, fractional = _parsed(json.dumps(raw))
    return dict(requests), list(fractional)


def active_usage(runs: QuerySet[Run], *by: str) -> dict[tuple[Any, ...], dict[str, int]]:
    """The ``by`` columns -> the whole-number requests of the active ``runs`` sharing them."""
    usage: dict[tuple[Any, ...], dict[str, int]] = {}
    rows = (
        runs.filter(phase__in=ACTIVE_PHASES)
        .values_list(*by, "requests")
        .annotate(n=Count("id"))
        .order_by()
    )
    for *key, raw, count in rows:
        total = usage.setdefault(tuple(key), {})
        for name, amount in _parsed(json.dumps(raw))[0]:
            total[name] = total.get(name, 0) + amount * count
    return usage
