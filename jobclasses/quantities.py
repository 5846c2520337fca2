"""CPU and memory amounts of a Job and a JobClass resource policy, with Kubernetes quantity
semantics (``250m``, ``"2"``, ``2``, ``1.5Gi``, ``1e3``; parsed by
``portal.machinery.quantities``).

Kubernetes' own bounds hold: CPU is counted in millicores (finer is refused, not rounded) and
memory in whole bytes, both at most a 64-bit integer of their unit.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from portal.machinery.quantities import QUANTITY_MAX, checked_amount, parse_quantity

RESOURCES = ("cpu", "memory")
MILLI = Decimal("0.001")


def resource_errors(resource: str, value: Any) -> list[str]:
    """Why ``value`` is not a valid amount of ``resource`` (``cpu`` or ``memory``); [] if it is."""
    amount, problems = checked_amount(value)
    if amount is None:
        return problems
    if resource == "cpu":
        if amount * 1000 > QUANTITY_MAX:
            return [f"must be at most {QUANTITY_MAX}m"]
        if amount % MILLI != 0:
            return ["must be a whole number of millicores (1m is the finest CPU amount)"]
    else:
        if amount > QUANTITY_MAX:
            return [f"must be at most {QUANTITY_MAX} bytes"]
        if amount != amount.to_integral_value():
            return ["must be a whole number of bytes"]
    return []


def amount(value: Any) -> Decimal:
    """The exact amount of a value that passed ``resource_errors``."""
    return parse_quantity(value)


def as_written(value: Any) -> str:
    """A quantity as status shows it: the string written, or the number as a string."""
    return value if isinstance(value, str) else repr(value)
