"""Lists and maps with Kubernetes' item and property limits (reported before the items)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .. import errors
from ..serializers import StrictCharField, field_error

INT32_MAX = 2**31 - 1  # Go int32 fields; also the PostgreSQL integer columns they feed


class BoundedListField(serializers.ListField):
    """A list with at most ``max_items`` items (FieldValueTooMany, before items are checked)."""

    def __init__(self, *, max_items: int, **kwargs: Any) -> None:
        self.max_items = max_items
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
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

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict) and len(data) > self.max_properties:
            raise field_error(
                f"Too many: {len(data)}: must have at most {self.max_properties} properties",
                errors.TOO_MANY,
            )
        return super().to_internal_value(data)
