"""A metav1.Condition list field (the rules are ``portal.machinery.conditions``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .. import errors
from ..conditions import validate_conditions
from ..openapi.fields import conditions_schema
from ..serializers import raise_causes

CONDITIONS_DOC = (
    "The latest observations of the object's state, one per condition type; set by the "
    "server (or the controller that owns the object)."
)


class ConditionsField(serializers.JSONField):
    """metav1.Condition list: ≤16, unique by type; ``types`` limits the types allowed."""

    def __init__(self, *, types: tuple[str, ...] = (), max_items: int = 16, **kwargs: Any):
        self.types = types
        self.max_items = max_items
        kwargs.setdefault("help_text", CONDITIONS_DOC)
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return conditions_schema(self.max_items, self.types)

    def to_internal_value(self, data: Any) -> Any:
        causes = validate_conditions(data, "", max_items=self.max_items)
        if self.types and isinstance(data, list):
            causes += [
                errors.not_supported(f"[{i}].type", c.get("type"), self.types)
                for i, c in enumerate(data)
                if isinstance(c, dict)
                and isinstance(c.get("type"), str)
                and c["type"]
                and c["type"] not in self.types
            ]
        raise_causes(causes)
        return data
