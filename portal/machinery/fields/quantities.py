"""One resource.Quantity field, stored as written (an integer or a string)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from ..openapi.fields import INT_OR_STRING
from ..quantities import quantity_errors
from ..serializers import field_error

QuantityRule = Callable[[Any], list[str]]


class QuantityField(serializers.JSONField):
    """A quantity checked by ``rule`` (why a value is refused; [] when it is fine): by default
    any non-negative int64 quantity; a kind passes a narrower rule (``integer_only`` counts,
    CPU in whole millicores)."""

    def __init__(self, *, rule: QuantityRule = quantity_errors, **kwargs: Any) -> None:
        self.rule = rule
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return INT_OR_STRING

    def to_internal_value(self, data: Any) -> Any:
        messages = self.rule(data)
        if messages:
            shown = data if isinstance(data, (str, int, float)) else type(data).__name__
            raise field_error(f'Invalid value: "{shown}": {messages[0]}')
        return data
