"""A kind's ``/status`` subresource, as the Kubernetes registry's status strategies.

A status update changes the status and nothing else: the store keeps every other field as it
was (``PrepareForUpdate``: ``store._validate_body``). The new status is validated by the
kind's status serializer and then against the status it replaces (``ValidateUpdate``): the
strategy's ``rules``. Controllers write status through their kind's one status writer
(``compare_and_set``), which records the change the same way, so the same watchers see it;
the rules hold the API's writers (an operator, a client granted ``<plural>/status``) to the
lifecycle those controllers keep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import errors
from .errors import FieldError

# (new status, old status) -> causes, paths from the object's root (``status.phase``)
StatusRule = Callable[[Mapping[str, Any], Mapping[str, Any]], list[FieldError]]


@dataclass(frozen=True)
class StatusStrategy:
    field: str = "status"
    rules: tuple[StatusRule, ...] = ()

    def validate_update(
        self, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
    ) -> list[FieldError]:
        return [cause for rule in self.rules for cause in rule(new or {}, old or {})]


def final_phases(noun: str, *phases: str, then: Mapping[str, tuple[str, ...]] = {}) -> StatusRule:
    """``status.phase`` never leaves ``phases`` once in one (a finished Run is not run again);
    ``then`` names phases that may move on only to the listed ones (Lost -> Released)."""

    def rule(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
        before, after = old.get("phase"), new.get("phase")
        if before == after or before is None:
            return []
        if before in phases:
            return [
                errors.invalid(
                    "status.phase",
                    f'Invalid value: "{after}": may not change once the {noun} is {before}',
                )
            ]
        allowed = then.get(before)
        if allowed is not None and after not in allowed:
            onward = " or ".join(allowed)
            return [
                errors.invalid(
                    "status.phase",
                    f'Invalid value: "{after}": a {before} {noun} may only become {onward}',
                )
            ]
        return []

    return rule


def set_once(*fields: str) -> StatusRule:
    """Status fields that, once set, keep their value (a workspace's bound pod)."""

    def rule(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
        return [
            errors.invalid(f"status.{name}", "Invalid value: may not change once set")
            for name in fields
            if old.get(name) and new.get(name) != old.get(name)
        ]

    return rule
