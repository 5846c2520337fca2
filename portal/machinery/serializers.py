"""DRF serializers for Kubernetes-shaped bodies: strict (unknown fields rejected) and
flattened into ``details.causes[]`` with JSON paths.

Kind-specific spec/status serializers subclass ``StrictSerializer``; the same classes validate
API input, admin edits and ``manage.py apply``, and feed the OpenAPI schema.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, cast

from django.core.serializers.json import DjangoJSONEncoder
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.fields import SkipField, empty

from . import errors
from .errors import FieldError

UNKNOWN_FIELD = "unknown"
NON_FIELD = "non_field_errors"  # flatten_errors reports this key at its parent's path
# A nested DRF error detail: field names (list indexes, for ``many``) -> sub-details, and a
# node's own messages under NON_FIELD.
ErrorTree = dict[Any, Any]
# A ``ResourceKind.body`` field: a serializer class (an object) or a field instance such as
# ``RuleSerializer(many=True)``.
BodySpec = type[serializers.BaseSerializer[Any]] | serializers.Field[Any, Any, Any, Any]


class StrictSerializer(serializers.Serializer[Any]):
    """A serializer that names unknown fields instead of silently dropping them, and reports
    every rule an object breaks at once.

    Rules between fields go in ``cross_field_causes``, not ``validate``: DRF runs ``validate``
    only once every field is valid, so a second problem would surface only after the first
    was fixed. ``cross_field_causes`` sees the raw input (types unchecked: guard them) and
    runs whether or not the fields are valid; its causes join the fields' own.
    """

    def cross_field_causes(self, data: dict[str, Any]) -> list[FieldError]:
        """Causes (paths relative to this serializer) of rules that span several fields."""
        return []

    def to_internal_value(self, data: Any) -> Any:
        detail: ErrorTree = {}
        value = None
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {NON_FIELD: exc.detail}
        if isinstance(data, dict):
            merge_detail(detail, error_detail(self.cross_field_causes(data)))
            # unknown fields are reported together with the known fields' errors
            detail.update(
                {key: [self.unknown_field(key)] for key in sorted(set(data) - set(self.fields))}
            )
        if detail:
            raise ValidationError(detail)
        return value

    def unknown_field(self, key: str) -> ErrorDetail:
        """The error for a field this object does not have (a subclass may say why)."""
        return ErrorDetail(f'unknown field "{key}"', code=UNKNOWN_FIELD)


# --- FieldError (paths relative to a serializer) -> nested DRF error detail ---------------

_PATH_TOKEN = re.compile(r"\[(\d+)\]|\[([^\]]*)\]|\.?([^.\[]+)")


def _path_keys(path: str) -> list[Any]:
    """``a.b[0].c[x.y/z]`` -> ``["a", "b", 0, "c[x.y/z]"]``: flatten_errors joins them back."""
    keys: list[Any] = []
    for index, bracket, name in _PATH_TOKEN.findall(path):
        if index:
            keys.append(int(index))
        elif name:
            keys.append(name)
        elif keys and isinstance(keys[-1], str):
            keys[-1] = f"{keys[-1]}[{bracket}]"
        else:
            keys.append(f"[{bracket}]")
    return keys


def error_detail(causes: list[FieldError]) -> ErrorTree:
    """Nested detail whose flattening yields each cause at its (relative) path."""
    tree: ErrorTree = {}
    for cause in causes:
        node = tree
        for key in _path_keys(cause.field):
            node = node.setdefault(key, {})
        node.setdefault(NON_FIELD, []).append(ErrorDetail(cause.message, code=cause.reason))
    return tree


def _as_tree(detail: Any) -> ErrorTree:
    """A DRF detail as a dict: a list of items (``many``) by index, a list of messages under
    NON_FIELD."""
    if isinstance(detail, dict):
        return detail
    if isinstance(detail, list) and detail and all(isinstance(d, (dict, list)) for d in detail):
        return {index: item for index, item in enumerate(detail) if item}
    return {NON_FIELD: list(detail) if isinstance(detail, list) else [detail]}


def merge_detail(into: ErrorTree, extra: ErrorTree) -> ErrorTree:
    """Merge ``extra`` into ``into`` (both nested DRF details) keeping every message."""
    for key, value in extra.items():
        if key not in into:
            into[key] = value
        elif key == NON_FIELD:
            into[key] = [*into[key], *value]
        else:
            into[key] = merge_detail(dict(_as_tree(into[key])), _as_tree(value))
    return into


def raise_causes(causes: list[FieldError]) -> None:
    """Raise the causes (paths relative to the field or serializer raising them), if any."""
    if causes:
        raise ValidationError(error_detail(causes))


# --- strict JSON primitives ---------------------------------------------------------------


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class StrictCharField(serializers.CharField):
    """A JSON string, verbatim: numbers are not turned into strings, whitespace is kept."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise field_error(f"expected a string, got {_type_name(data)}", errors.TYPE_INVALID)
        return super().to_internal_value(data)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer (an integral float such as ``3.0`` too); strings and booleans fail.

    Bounded to int64 unless the field names a narrower range: every integer must fit the
    column it lands in (and Go's int64, for clients that share the manifests)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", INT64_MIN)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            raise field_error(f"expected an integer, got {_type_name(data)}", errors.TYPE_INVALID)
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON boolean only (DRF would also take ``"yes"``, ``1``, ``"on"``)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise field_error(f"expected a boolean, got {_type_name(data)}", errors.TYPE_INVALID)
        return data


class FreeformObjectField(serializers.JSONField):
    """A JSON object passed through as-is (e.g. an inlined PodTemplateSpec)."""

    default_error_messages = {"not_a_dict": "Expected an object but got {input_type}."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        return super().to_internal_value(data)


class StringMapField(serializers.DictField):
    """``map[string]string`` (labels, env maps, ResourceList-as-strings)."""

    child = StrictCharField(allow_blank=True)


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
    errors.REQUIRED,
    errors.INVALID,
    errors.NOT_SUPPORTED,
    errors.DUPLICATE,
    errors.TOO_LONG,
    errors.TOO_MANY,
    errors.FORBIDDEN,
    errors.TYPE_INVALID,
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


def fresh_field(spec: BodySpec) -> serializers.Field[Any, Any, Any, Any]:
    """An unbound copy of a body field declared as an instance (a field binds to one parent)."""
    if isinstance(spec, type):
        return spec()
    if isinstance(spec, serializers.ListSerializer):
        # the child of a body field's ListSerializer is a serializer (``X(many=True)``)
        child = cast(serializers.BaseSerializer[Any], spec.child)
        return type(child)(many=True, required=spec.required, help_text=spec.help_text)
    return copy.deepcopy(spec)


def validate_with(spec: BodySpec, data: Any, path: str) -> tuple[Any, list[FieldError]]:
    """Validate one body field with a serializer class (an object) or a field instance
    (e.g. ``PolicyRuleSerializer(many=True)``); returns (plain validated data, causes)."""
    if not isinstance(spec, type):
        field = fresh_field(spec)
        if data is None:  # absent (or null): a list is empty, a scalar field's default applies
            data = [] if isinstance(field, serializers.ListSerializer) else empty
        try:
            return to_plain(field.run_validation(data)), []
        except SkipField:  # absent, and no default
            return None, []
        except ValidationError as exc:
            return None, flatten_errors(exc.detail, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [
            FieldError(path, errors.TYPE_INVALID, f"expected an object, got {type(data).__name__}")
        ]
    serializer = spec(data=data)
    if serializer.is_valid():
        return to_plain(serializer.validated_data), []
    return None, flatten_errors(serializer.errors, path)


def field_error(message: str, code: str = errors.INVALID) -> ValidationError:
    """Raise from a serializer ``validate_*``: the cause type is ``code``."""
    return ValidationError(ErrorDetail(message, code=code))


class ObjectMetaSerializer(StrictSerializer):
    """metav1.ObjectMeta as accepted on input (server-set fields are read back, not trusted).

    Every field has its JSON type checked, so a number where a string belongs is named, not
    turned into a string or left to crash whatever reads it next."""

    name = StrictCharField(
        required=False, allow_blank=True, help_text="Unique within a namespace; cannot be updated."
    )
    generateName = StrictCharField(
        required=False,
        allow_blank=True,
        help_text="A prefix the server completes into a unique name when name is empty.",
    )
    namespace = StrictCharField(
        required=False, allow_blank=True, help_text="The namespace of a namespaced object."
    )
    labels = StringMapField(required=False, help_text="Keys and values that label selectors match.")
    annotations = StringMapField(
        required=False, help_text="Arbitrary, non-identifying metadata kept with the object."
    )
    finalizers = serializers.ListField(
        child=StrictCharField(),
        required=False,
        help_text="Names that must each be removed before a deleted object goes away.",
    )
    ownerReferences = serializers.ListField(
        help_text=(
            "The objects this one depends on (each apiVersion, kind, name, uid; controller "
            "marks the one managing it); when every owner is gone, the garbage collector "
            "deletes this object."
        ),
        child=serializers.DictField(),
        required=False,
    )
    uid = StrictCharField(
        help_text=(
            "The object's unique id for its whole life, set by the server on create; read-only."
        ),
        required=False,
        allow_blank=True,
    )
    resourceVersion = StrictCharField(
        help_text=(
            "An opaque version, set by the server on every change; send it back on update to "
            "refuse a conflicting write (409), or pass it to watch from there."
        ),
        required=False,
        allow_blank=True,
    )
    generation = StrictIntegerField(
        help_text=(
            "A number the server increases on each change of the desired state (spec); read-only."
        ),
        required=False,
    )
    creationTimestamp = StrictCharField(
        help_text="When the object was created, set by the server; read-only.",
        required=False,
        allow_null=True,
    )
    deletionTimestamp = StrictCharField(
        help_text=(
            "When the object was asked to be deleted, set by the server; it goes away once "
            "its finalizers are all removed. Read-only."
        ),
        required=False,
        allow_null=True,
    )
    deletionGracePeriodSeconds = StrictIntegerField(
        help_text=(
            "Seconds the object is allowed to terminate gracefully after deletion, set by the"
            " server; read-only."
        ),
        required=False,
        allow_null=True,
    )
    managedFields = serializers.ListField(
        help_text=(
            "Which field manager set which fields, as server-side apply tracks them; set by "
            "the server."
        ),
        required=False,
    )
    selfLink = StrictCharField(
        help_text="Deprecated and not set; kept for compatibility.",
        required=False,
        allow_blank=True,
    )
