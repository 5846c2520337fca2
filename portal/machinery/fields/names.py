"""Object names and label values as string fields (the rules are
``portal.machinery.validation``)."""

from __future__ import annotations

from typing import Any

from ..serializers import StrictCharField, field_error
from ..validation import dns1123_subdomain_errors, label_value_errors


def checked(value: str, messages: list[str]) -> str:
    """``value``, or the first message as an Invalid value error."""
    if messages:
        raise field_error(f'Invalid value: "{value}": {messages[0]}')
    return value


class SubdomainField(StrictCharField):
    """A DNS-1123 subdomain (≤253): the name of an object."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        return checked(value, dns1123_subdomain_errors(value))


def name_errors(value: str) -> list[str]:
    """A non-empty label value."""
    return label_value_errors(value) if value else ["must not be empty"]


class LabelValueField(StrictCharField):
    """A non-empty Kubernetes label value (≤63)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 63)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        return checked(value, name_errors(value))
