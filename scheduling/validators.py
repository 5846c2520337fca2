"""Transition and cross-object rules of the scheduling kinds: ``(new, old|None) -> causes``.

The serializers check each body on its own; these compare a write with the stored object
(immutability, one-way switches) or look at metadata (the priority annotation).
"""

from __future__ import annotations

import re

from portal.machinery import errors
from portal.machinery.errors import FieldError

from .models import PRIORITY_ANNOTATION

# Execution inputs: fixed once the Run exists (ttlSecondsAfterFinished and cancelRequested
# are the only spec fields a client may still change).
RUN_IMMUTABLE_FIELDS = (
    "runtime",
    "source",
    "mode",
    "env",
    "timeout",
    "retryPolicy",
    "resources",
    "workspace",
    "affinity",
    "artifactInputs",
)
IMMUTABLE_MESSAGE = "field is immutable"
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _spec(manifest: dict | None) -> dict:
    return (manifest or {}).get("spec") or {}


def run_spec_immutable(new: dict, old: dict | None) -> list[FieldError]:
    """runtime, source, mode, ... cannot be set, changed or removed after create."""
    if old is None:
        return []
    new_spec, old_spec = _spec(new), _spec(old)
    return [
        errors.invalid(f"spec.{name}", IMMUTABLE_MESSAGE)
        for name in RUN_IMMUTABLE_FIELDS
        if new_spec.get(name) != old_spec.get(name)
    ]


def cancel_requested_is_one_way(new: dict, old: dict | None) -> list[FieldError]:
    """Once true, spec.cancelRequested can neither go back to false nor be removed."""
    if old is None or _spec(old).get("cancelRequested") is not True:
        return []
    if _spec(new).get("cancelRequested") is True:
        return []
    return [
        errors.invalid(
            "spec.cancelRequested", "Invalid value: may not be reset to false or removed once true"
        )
    ]


def priority_annotation_is_integer(new: dict, old: dict | None) -> list[FieldError]:
    """scheduling.kruntimes.io/priority, when set, is a 32-bit integer."""
    annotations = (new.get("metadata") or {}).get("annotations") or {}
    if PRIORITY_ANNOTATION not in annotations:
        return []
    value = annotations[PRIORITY_ANNOTATION]
    path = f"metadata.annotations[{PRIORITY_ANNOTATION}]"
    if not isinstance(value, str) or not _INTEGER_RE.fullmatch(value):
        return [errors.invalid(path, f'Invalid value: "{value}": must be an integer')]
    if not _INT32_MIN <= int(value) <= _INT32_MAX:
        return [
            errors.invalid(
                path, f'Invalid value: "{value}": must be between {_INT32_MIN} and {_INT32_MAX}'
            )
        ]
    return []


RUN_VALIDATORS = (run_spec_immutable, cancel_requested_is_one_way, priority_annotation_is_integer)
RUNTIME_VALIDATORS = ()
