"""Strict JSON primitives for the scheduling kinds.

DRF's stock fields coerce (``"5"`` -> 5, ``5`` -> ``"5"``, ``"yes"`` -> True) and trim
whitespace; a Kubernetes API server rejects the wrong JSON type and keeps strings verbatim, so
these fields do too.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.conditions import parse_time
from portal.machinery.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    field_error,
    raise_causes,
)
from portal.machinery.validation import parse_duration_ns

__all__ = [
    "BoundedListField",
    "BoundedMapField",
    "DurationField",
    "StrictBooleanField",
    "StrictCharField",
    "StrictIntegerField",
    "TimeField",
    "raise_causes",
    "relative_path_errors",
]

INT32_MAX = 2**31 - 1  # Go int32 fields; also the PostgreSQL integer columns they feed


class BoundedListField(serializers.ListField):
    """A list with at most ``max_items`` items (FieldValueTooMany, before items are checked)."""

    def __init__(self, *, max_items: int, **kwargs: Any) -> None:
        self.max_items = max_items
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list:
        if isinstance(data, list) and len(data) > self.max_items:
            raise field_error(
                f"Too many: {len(data)}: must have at most {self.max_items} items", errors.TOO_MANY
            )
        return super().to_internal_value(data)


class BoundedMapField(serializers.DictField):
    """``map[string]string`` with at most ``max_properties`` keys."""

    def __init__(self, *, max_properties: int, **kwargs: Any) -> None:
        self.max_properties = max_properties
        kwargs.setdefault("child", StrictCharField(allow_blank=True))
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict:
        if isinstance(data, dict) and len(data) > self.max_properties:
            raise field_error(
                f"Too many: {len(data)}: must have at most {self.max_properties} properties",
                errors.TOO_MANY,
            )
        return super().to_internal_value(data)


class DurationField(StrictCharField):
    """A Go duration string (``30s``, ``5m``, ``1h30m``); ``positive`` demands > 0."""

    def __init__(self, *, positive: bool = False, **kwargs: Any) -> None:
        self.positive = positive
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            ns = parse_duration_ns(value)
        except ValueError as exc:
            raise field_error(f"{exc} (e.g. '30s', '5m', '1h30m')") from None
        if ns < 0 or (self.positive and ns == 0):
            bound = "greater than 0" if self.positive else "greater than or equal to 0"
            raise field_error(f'Invalid value: "{value}": must be {bound}')
        return value


class TimeField(StrictCharField):
    """A metav1.Time on the wire: an RFC 3339 string, kept as written."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            parse_time(value)
        except ValueError:
            raise field_error(f'Invalid value: "{value}": must be an RFC 3339 time') from None
        return value


def relative_path_errors(value: str, *, allow_dot_segments: bool = False) -> list[str]:
    """A relative slash-separated path. Without ``allow_dot_segments``: no empty, ``.`` or
    ``..`` segment; with it only ``..`` segments are refused (``./run.sh`` is fine)."""
    if value.startswith("/"):
        return ["must be a relative path"]
    segments = value.split("/")
    if allow_dot_segments:
        return ["must not contain a '..' segment"] if ".." in segments else []
    if any(segment in ("", ".", "..") for segment in segments):
        return ["must not contain empty, '.' or '..' segments"]
    return []
