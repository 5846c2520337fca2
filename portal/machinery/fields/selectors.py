"""A metav1.LabelSelector field (the rules are ``portal.machinery.labels``)."""

from __future__ import annotations

from typing import Any

from ..labels import validate_label_selector
from ..serializers import FreeformObjectField, field_error, raise_causes


class LabelSelectorField(FreeformObjectField):
    """metav1.LabelSelector. ``{}`` selects everything; where that would be a mistake (an
    affinity term) ``allow_empty=False`` demands matchLabels or matchExpressions."""

    def __init__(self, *, allow_empty: bool = True, **kwargs: Any) -> None:
        self.allow_empty = allow_empty
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        data = super().to_internal_value(data)
        raise_causes(validate_label_selector(data, ""))
        if (
            not self.allow_empty
            and not data.get("matchLabels")
            and not data.get("matchExpressions")
        ):
            raise field_error(
                "Invalid value: labelSelector must not be empty: set matchLabels "
                "or matchExpressions"
            )
        return dict(data)
