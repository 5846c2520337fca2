"""Resource vectors: Runtime Pod capacity and Run requests, integers only.

Fractional requests (``0.5``, ``500m``) are admitted by the API but can never be placed;
the scheduler fails such a Run with a clear reason instead of leaving it Pending forever.
"""

from __future__ import annotations

from typing import Any

DEFAULT_POD_CAPACITY = {"runs": 2}
DEFAULT_RUN_REQUESTS = {"runs": 1}
CAPACITY_ANNOTATION_PREFIX = "kruntimes.io/capacity."


def as_integer(value: Any) -> int | None:
    """A whole, non-negative quantity (``2``, ``"2"``, ``"1k"``, ``"1Gi"``) as an int, or None
    when it is fractional (``0.5``, ``"500m"``) or not a quantity."""
    from portal.machinery.quantities import parse_quantity

    try:
        number = parse_quantity(value)
    except ValueError:
        return None
    if number < 0 or number != number.to_integral_value():
        return None
    return int(number)


def run_requests(spec: dict) -> tuple[dict[str, int], list[str]]:
    """(requests, names of resources whose request is not a whole number)."""
    raw = ((spec or {}).get("resources") or {}).get("requests") or DEFAULT_RUN_REQUESTS
    requests: dict[str, int] = {}
    fractional: list[str] = []
    for name, value in raw.items():
        number = as_integer(value)
        if number is None:
            fractional.append(name)
        elif number > 0:  # admission drops zeros; a row written before that still takes a slot
            requests[name] = number
    if "runs" not in fractional:
        requests.setdefault("runs", 1)
    return requests, sorted(fractional)


def pod_capacity(runtime_spec: dict | None, annotations: dict | None) -> dict[str, int]:
    """spec.capacity.resources, overridden per pod by ``kruntimes.io/capacity.<resource>``."""
    capacity = dict(DEFAULT_POD_CAPACITY)
    for name, value in (
        ((runtime_spec or {}).get("capacity") or {}).get("resources") or {}
    ).items():
        number = as_integer(value)
        if number is not None:
            capacity[name] = number
    for key, value in (annotations or {}).items():
        if key.startswith(CAPACITY_ANNOTATION_PREFIX):
            number = as_integer(value)
            if number is not None:
                capacity[key[len(CAPACITY_ANNOTATION_PREFIX) :]] = number
    return capacity


def add(total: dict[str, int], delta: dict[str, int], sign: int = 1) -> None:
    for name, value in delta.items():
        total[name] = total.get(name, 0) + sign * value
