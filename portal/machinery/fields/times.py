"""Go durations (``30s``, ``1h30m``) and metav1.Time, kept as written."""

from __future__ import annotations

from typing import Any

from ..conditions import parse_time
from ..serializers import StrictCharField, field_error
from ..validation import parse_duration_ns


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
