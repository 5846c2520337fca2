"""Kubernetes ``resource.Quantity``: ``2``, ``"250m"``, ``"1.5Gi"``, ``"1e3"``.

One parser for every kind that takes quantities (Run and Runtime ResourceLists, the JobClass
resource policy and a Job's requests and limits). Values are compared as exact decimals, so
``"1"``, ``"1000m"`` and ``1`` are the same amount.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

QUANTITY_MAX = 2**63 - 1  # int64, as Kubernetes

QUANTITY_RE = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (``2``, ``"2"``, ``"500m"``, ``"1Gi"``, ``"1e3"``) as a Decimal.

    Raises ValueError for anything else (booleans, other types, other spellings)."""
    if isinstance(value, bool):
        raise ValueError(f"quantities must be numbers or strings, not {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    match = QUANTITY_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"quantities must match the regular expression '{QUANTITY_RE.pattern}'")
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    try:
        if suffix in _BINARY:
            return number * Decimal(1024 ** _BINARY[suffix])
        if suffix in _DECIMAL:
            return number.scaleb(_DECIMAL[suffix])
        return number.scaleb(int(suffix[1:]))
    except ArithmeticError:  # decimal Overflow/InvalidOperation for absurd exponents
        raise ValueError("quantity out of range") from None


def checked_amount(value: Any) -> tuple[Decimal | None, list[str]]:
    """(the amount, []) for a non-negative quantity, or (None, why it is not one)."""
    try:
        amount = parse_quantity(value)
    except ValueError as exc:
        return None, [str(exc)]
    if amount < 0:
        return None, ["must be greater than or equal to 0"]
    return amount, []


_INTEGER_STRING_RE = re.compile(r"\+?[0-9]+")


def quantity_errors(value: Any, *, integer_only: bool = False) -> list[str]:
    """Why ``value`` is not a non-negative int64 quantity ([] if it is); ``integer_only`` also
    refuses fractions and any spelling other than an int or a plain integer string."""
    amount, problems = checked_amount(value)
    if amount is None:
        return problems
    if amount > QUANTITY_MAX:
        return [f"must be at most {QUANTITY_MAX} (a 64-bit integer)"]
    if integer_only and (
        amount != amount.to_integral_value()
        or (isinstance(value, str) and not _INTEGER_STRING_RE.fullmatch(value))
    ):
        return ['must be an integer, written as a number or a string of digits (2 or "2")']
    return []
