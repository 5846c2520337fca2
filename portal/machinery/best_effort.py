"""A body field's value as far as it validates: what the transition rules compare when the
field rules already failed.

Kubernetes evaluates an update's transition rules (immutability, one-way switches, CEL
``oldSelf`` rules, the strategy's ValidateUpdate) together with the field rules and answers
every cause in one 422. A rule compares values as stored, defaulted and normalised, so the
value it sees must be what validation would have produced wherever validation succeeded:
every part of the object that validates is its validated value (its defaults filled in), and
a part that fails is what the client sent. Only a type error blocks the rules (as a CRD's
``x-kubernetes-validations`` wait for a well-typed object): a string where an object belongs
gives a rule nothing to compare.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import SkipField, empty

from . import errors
from .errors import FieldError
from .serializers import BodySpec, fresh_field, to_plain

ABSENT = object()


def blocks_rules(causes: Iterable[FieldError]) -> bool:
    """Whether the object is too malformed for the transition rules to see it."""
    return any(cause.reason == errors.TYPE_INVALID for cause in causes)


def body_value(spec: BodySpec, data: Any) -> Any:
    """The best-effort value of one body field (``None`` when absent), as ``validate_with``
    would have returned it had every part been valid."""
    field = fresh_field(spec)
    if data is None and isinstance(spec, type):
        data = {}
    elif data is None:
        data = [] if isinstance(field, serializers.ListSerializer) else empty
    value, _ = _value(field, data)
    return None if value is ABSENT else to_plain(value)


def _value(field: Any, data: Any) -> tuple[Any, bool]:
    """(the value, whether it validated)."""
    try:
        return field.run_validation(data), True
    except SkipField:
        return ABSENT, True
    except ValidationError:
        pass
    if data is empty:
        return ABSENT, False
    if isinstance(field, serializers.Serializer) and isinstance(data, dict):
        return _object_value(field, data), False
    if isinstance(field, (serializers.ListSerializer, serializers.ListField)) and isinstance(
        data, list
    ):
        return [_item(field.child, item) for item in data], False
    return data, False


def _item(child: Any, data: Any) -> Any:
    value, _ = _value(child, data)
    return None if value is ABSENT else value


def _object_value(serializer: serializers.Serializer[Any], data: dict[str, Any]) -> Any:
    """DRF's ``Serializer.to_internal_value`` field by field, keeping each field's own
    ``validate_<name>`` and default; the object's cross-field ``validate`` is left out (it
    failed, or a field did)."""
    value: dict[str, Any] = {}
    for field in serializer._writable_fields:
        validated, ok = _value(field, field.get_value(data))
        if validated is ABSENT:
            continue
        check = getattr(serializer, f"validate_{field.field_name}", None)
        if ok and check is not None:
            with contextlib.suppress(ValidationError, SkipField):
                validated = check(validated)
        serializer.set_value(value, field.source_attrs, validated)
    return value
