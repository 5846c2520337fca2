"""The kind's rules run beside its field rules: one 422 names every cause at once.

A write's causes come from its field rules (the body serializers, metadata) and from its
rules over the whole object: the kind's validators (cross-field rules, and on an update the
transition rules comparing it with the stored object, such as immutability), the status
strategy's ``ValidateUpdate`` and the metadata's own transition rules. Kubernetes evaluates
them together and answers all causes in one Status, each with its field path; so does the
store: the rules see the body as far as it validates (``best_effort``) and run unless a type
error left nothing to compare.

The causes keep a fixed order (field rules, then the rules in the order the kind lists them)
and a cause two rules both report is named once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import best_effort
from .errors import FieldError
from .serializers import BodySpec, validate_with

Rule = Callable[[], list[FieldError]]
T = TypeVar("T")

# What a rule written for a valid object may raise when it reads an invalid one (a required
# field missing, a value of the wrong shape); the write is refused by the other causes anyway.
_UNREADABLE = (LookupError, TypeError, ValueError, AttributeError)


def validate_field(spec: BodySpec, data: Any, path: str) -> tuple[Any, list[FieldError]]:
    """(the validated value, or when it fails its best-effort value; the causes)."""
    value, causes = validate_with(spec, data, path)
    if causes:
        value = best_effort.body_value(spec, data)
    return value, causes


def run_if_seen(found: list[FieldError], step: Callable[[], T], otherwise: T) -> T:
    """``step()`` on an object the field rules passed; on one they refused, ``step()`` if it
    can read it, else ``otherwise``."""
    if not found:
        return step()
    if best_effort.blocks_rules(found):
        return otherwise
    try:
        return step()
    except _UNREADABLE:
        return otherwise


def causes(found: list[FieldError], rules: Iterable[Rule]) -> list[FieldError]:
    """The rules' causes that ``found`` (the field rules' causes) does not already name."""
    seen, extra = set(found), []
    none: list[FieldError] = []
    for rule in rules:
        for cause in run_if_seen(found, rule, none):
            if cause not in seen:
                seen.add(cause)
                extra.append(cause)
    return extra
