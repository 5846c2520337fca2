"""DRF serializers for Kubernetes-shaped bodies: strict (unknown fields rejected) and
flattened into ``details.causes[]`` with JSON paths.

Kind-specific spec/status serializers subclass ``StrictSerializer``; the same classes validate
API input, admin edits and ``manage.py apply``, and feed the OpenAPI schema.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from . import errors
from .errors import FieldError

UNKNOWN_FIELD = "unknown"


class StrictSerializer(serializers.Serializer):
    """A serializer that names unknown fields instead of silently dropping them."""

    def to_internal_value(self, data: Any) -> Any:
        unknown = {}
        if isinstance(data, dict):
            unknown = {key: [ErrorDetail(f'unknown field "{key}"', code=UNKNOWN_FIELD)]
                       for key in sorted(set(data) - set(self.fields))}
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            # report unknown fields together with the known fields' errors
            if unknown and isinstance(exc.detail, dict):
                raise ValidationError({**exc.detail, **unknown}) from None
            raise
        if unknown:
            raise ValidationError(unknown)
        return value


class FreeformObjectField(serializers.JSONField):
    """A JSON object passed through as-is (e.g. an inlined PodTemplateSpec)."""

    default_error_messages = {"not_a_dict": "Expected an object but got {input_type}."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        return super().to_internal_value(data)


class StringMapField(serializers.DictField):
    """``map[string]string`` (labels, env maps, ResourceList-as-strings)."""

    child = serializers.CharField(allow_blank=True, trim_whitespace=False)


_CODE_TO_CAUSE = {
    "required": errors.REQUIRED,
    "null": errors.REQUIRED,
    "blank": errors.REQUIRED,
    "empty": errors.REQUIRED,
    "max_length": errors.TOO_LONG,
    "max_string_length": errors.TOO_LONG,
    "invalid_choice": errors.NOT_SUPPORTED,
    UNKNOWN_FIELD: errors.FORBIDDEN,
    "not_a_list": errors.TYPE_INVALID,
    "not_a_dict": errors.TYPE_INVALID,
    "not_a_string": errors.TYPE_INVALID,
}
_CAUSE_TYPES = {
    errors.REQUIRED, errors.INVALID, errors.NOT_SUPPORTED, errors.DUPLICATE, errors.TOO_LONG,
    errors.TOO_MANY, errors.FORBIDDEN, errors.TYPE_INVALID,
}


def _join(path: str, key: Any) -> str:
    if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
        return f"{path}[{key}]"
    if key in ("non_field_errors", None, ""):
        return path
    return f"{path}.{key}" if path else str(key)


def flatten_errors(detail: Any, path: str) -> list[FieldError]:
    """Turn DRF's nested error detail into Kubernetes causes with JSON paths."""
    if isinstance(detail, dict):
        causes: list[FieldError] = []
        for key, value in detail.items():
            causes.extend(flatten_errors(value, _join(path, key)))
        return causes
    if isinstance(detail, list):
        if detail and all(isinstance(d, (dict, list)) for d in detail):
            # many=True: one entry per item, empty for the valid ones
            causes = []
            for index, item in enumerate(detail):
                causes.extend(flatten_errors(item, _join(path, index)))
            return causes
        return [c for d in detail for c in flatten_errors(d, path)]
    code = getattr(detail, "code", None) or "invalid"
    reason = code if code in _CAUSE_TYPES else _CODE_TO_CAUSE.get(code, errors.INVALID)
    return [FieldError(path, reason, str(detail))]


def to_plain(data: Any) -> Any:
    """Validated data as plain JSON types (what is stored and served)."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def fresh_field(spec: Any) -> serializers.Field:
    """An unbound copy of a body field declared as an instance (a field binds to one parent)."""
    if isinstance(spec, type):
        return spec()
    if isinstance(spec, serializers.ListSerializer):
        return type(spec.child)(many=True, required=spec.required)
    return copy.deepcopy(spec)


def validate_with(spec: Any, data: Any, path: str) -> tuple[Any, list[FieldError]]:
    """Validate one body field with a serializer class (an object) or a field instance
    (e.g. ``PolicyRuleSerializer(many=True)``); returns (plain validated data, causes)."""
    if not isinstance(spec, type):
        field = fresh_field(spec)
        if data is None:
            data = [] if isinstance(field, serializers.ListSerializer) else data
        try:
            return to_plain(field.run_validation(data)), []
        except ValidationError as exc:
            return None, flatten_errors(exc.detail, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [FieldError(path, errors.TYPE_INVALID,
                                 f"expected an object, got {type(data).__name__}")]
    serializer = spec(data=data)
    if serializer.is_valid():
        return to_plain(serializer.validated_data), []
    return None, flatten_errors(serializer.errors, path)


def field_error(message: str, code: str = errors.INVALID) -> ValidationError:
    """Raise from a serializer ``validate_*``: the cause type is ``code``."""
    return ValidationError(ErrorDetail(message, code=code))


class ObjectMetaSerializer(StrictSerializer):
    """metav1.ObjectMeta as accepted on input (server-set fields are read back, not trusted)."""

    name = serializers.CharField(required=False, allow_blank=True)
    generateName = serializers.CharField(required=False, allow_blank=True)
    namespace = serializers.CharField(required=False, allow_blank=True)
    labels = StringMapField(required=False)
    annotations = StringMapField(required=False)
    finalizers = serializers.ListField(child=serializers.CharField(), required=False)
    ownerReferences = serializers.ListField(child=serializers.DictField(), required=False)
    uid = serializers.CharField(required=False, allow_blank=True)
    resourceVersion = serializers.CharField(required=False, allow_blank=True)
    generation = serializers.IntegerField(required=False)
    creationTimestamp = serializers.CharField(required=False, allow_null=True)
    deletionTimestamp = serializers.CharField(required=False, allow_null=True)
    deletionGracePeriodSeconds = serializers.IntegerField(required=False, allow_null=True)
    managedFields = serializers.ListField(required=False)
    selfLink = serializers.CharField(required=False, allow_blank=True)
