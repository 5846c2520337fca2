"""A DRF field or serializer as an OpenAPI 3.0 schema: the one generator of field schemas.

Two flavours of the same walk. ``closed=False`` is what Kubernetes serves and a CRD needs: a
structural schema (every node typed, objects carry no ``additionalProperties`` unless they are
maps; the strict serializers refuse unknown fields, as pruning would). ``closed=True`` adds
``additionalProperties: false`` to every non-map object, which tells fuzzers and client
generators (``/api/schema/``) that unknown fields are refused.

A field class can give its own schema with an ``openapi_schema()`` method (quantities,
conditions); its description, default and nullability are still added here.
"""

from __future__ import annotations

import copy
import inspect
import json
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

from ..managed_fields import LIST_MAP_KEYS
from ..serializers import INT64_MAX, INT64_MIN, FreeformObjectField

Schema = dict[str, Any]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
# resource.Quantity and intstr.IntOrString, as Kubernetes publishes them for CRDs
INT_OR_STRING: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}


def own_doc(cls: type) -> str:
    """The docstring a class declares itself (not one inherited from StrictSerializer)."""
    doc = cls.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def serializer_schema(
    serializer: serializers.BaseSerializer[Any], *, closed: bool = False, partial: bool = False
) -> Schema:
    """An object schema for a serializer's fields. ``partial`` (a merge patch) requires none, in
    nested objects too; list items are whole objects again (a merge patch replaces lists)."""
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for name, field in serializer.fields.items():  # type: ignore[attr-defined]
        if isinstance(field, serializers.HiddenField):
            continue
        properties[name] = list_type(name, field_schema(field, closed=closed, partial=partial))
        if field.required and not partial:
            required.append(name)
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = sorted(required)
    description = own_doc(type(serializer))
    if description:
        schema["description"] = description
    if closed:
        schema["additionalProperties"] = False
    return schema


def field_schema(
    field: serializers.Field[Any, Any, Any, Any], *, closed: bool = False, partial: bool = False
) -> Schema:
    """The schema of one field, with its help_text, default and nullability."""
    schema = _type_schema(field, closed, partial)
    help_text = getattr(field, "help_text", None)
    if help_text:
        schema["description"] = str(help_text)
    default = _default(field)
    if default is not empty:
        schema["default"] = default
    if getattr(field, "allow_null", False):
        schema["nullable"] = True
    return schema


def _type_schema(
    field: serializers.Field[Any, Any, Any, Any], closed: bool, partial: bool
) -> Schema:
    own = getattr(field, "openapi_schema", None)
    if callable(own):
        return copy.deepcopy(own())
    if isinstance(field, serializers.ListSerializer):
        child = field.child
        assert child is not None  # a ListSerializer always has its child serializer
        return _array(field_schema(child, closed=closed), field)
    if isinstance(field, serializers.BaseSerializer):
        return serializer_schema(field, closed=closed, partial=partial)
    if isinstance(field, serializers.ChoiceField):
        return _enum(list(field.choices))
    if isinstance(field, serializers.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, serializers.IntegerField):
        return _integer(field.min_value, field.max_value)
    if isinstance(field, serializers.FloatField):
        return {"type": "number", "format": "double"}
    if isinstance(field, serializers.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if isinstance(field, serializers.CharField):
        return _string(field)
    if isinstance(field, serializers.ListField):
        return _array(_child(field.child, closed), field)
    if isinstance(field, serializers.DictField):
        schema: Schema = {"type": "object", "additionalProperties": _child(field.child, closed)}
        for attr, key in (("max_properties", "maxProperties"), ("min_properties", "minProperties")):
            if getattr(field, attr, None):
                schema[key] = getattr(field, attr)
        return schema
    if isinstance(field, FreeformObjectField):
        return {"type": "object", PRESERVE_UNKNOWN: True}
    # JSONField and anything else: any JSON value, kept as sent
    return {PRESERVE_UNKNOWN: True}


def _child(child: serializers.Field[Any, Any, Any, Any] | None, closed: bool) -> Schema:
    if child is None or type(child).__name__ == "_UnvalidatedField":
        return {PRESERVE_UNKNOWN: True}
    return field_schema(child, closed=closed)


def _array(items: Schema, field: serializers.Field[Any, Any, Any, Any]) -> Schema:
    schema: Schema = {"type": "array", "items": items}
    most = getattr(field, "max_items", None) or getattr(field, "max_length", None)
    least = getattr(field, "min_length", None)
    if not getattr(field, "allow_empty", True):
        least = max(least or 0, 1)
    if most is not None:
        schema["maxItems"] = most
    if least:
        schema["minItems"] = least
    return schema


def _enum(choices: list[Any]) -> Schema:
    if all(isinstance(c, bool) for c in choices):
        kind = "boolean"
    elif all(isinstance(c, int) and not isinstance(c, bool) for c in choices):
        kind = "integer"
    else:
        kind = "string"
    return {"type": kind, "enum": choices}


def _integer(least: Any, most: Any) -> Schema:
    schema: Schema = {"type": "integer"}
    if least is not None and least >= INT32_MIN and most is not None and most <= INT32_MAX:
        schema["format"] = "int32"
    else:
        schema["format"] = "int64"
    if least is not None and least != INT64_MIN:
        schema["minimum"] = least
    if most is not None and most != INT64_MAX:
        schema["maximum"] = most
    return schema


def _string(field: serializers.CharField) -> Schema:
    schema: Schema = {"type": "string"}
    if field.max_length is not None:
        schema["maxLength"] = field.max_length
    least = field.min_length or (0 if field.allow_blank else 1)
    if least:
        schema["minLength"] = least
    for validator in field.validators:
        regex = getattr(validator, "regex", None)
        if regex is not None and not getattr(validator, "inverse_match", False):
            schema["pattern"] = regex.pattern
    return schema


def _default(field: serializers.Field[Any, Any, Any, Any]) -> Any:
    """A default the server applies when the field is left out, if it is plain JSON."""
    default = field.default
    if default is empty:
        return empty
    if callable(default):
        if getattr(default, "requires_context", False):
            return empty
        default = default()
    try:
        return json.loads(json.dumps(default))
    except (TypeError, ValueError):
        return empty


def list_type(name: str, schema: Schema) -> Schema:
    """Mark a list of named items that server-side apply merges item by item
    (``managed_fields.LIST_MAP_KEYS``) as Kubernetes does: ``x-kubernetes-list-type: map``,
    when every item must carry its keys (a CRD may not key a list by an optional field)."""
    keys = LIST_MAP_KEYS.get(name)
    items = schema.get("items") if schema.get("type") == "array" else None
    if not keys or not isinstance(items, dict) or "x-kubernetes-list-type" in schema:
        return schema
    if not set(keys) <= set(items.get("required") or ()):
        return schema
    return {**schema, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


def conditions_schema(max_items: int = 16, types: tuple[str, ...] = ()) -> Schema:
    """A metav1.Condition list, a map keyed by ``type``."""
    condition_type: Schema = {"type": "string", "maxLength": 316}
    if types:
        condition_type["enum"] = list(types)
    return {
        "type": "array",
        "maxItems": max_items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type", "status"],
            "description": "One aspect of the object's current state, as metav1.Condition.",
            "properties": {
                "type": {
                    **condition_type,
                    "description": "The aspect this condition reports, "
                    "in CamelCase (Ready, Succeeded ...); unique within the list.",
                },
                "status": {
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                    "description": "Whether the condition holds: True, False or Unknown.",
                },
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "description": "A CamelCase word saying why the condition last changed.",
                },
                "message": {
                    "type": "string",
                    "maxLength": 32768,
                    "description": "A human-readable account of the last transition.",
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "The metadata.generation the condition was set from; "
                    "older than the object's generation means the condition is out of date.",
                },
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When status last changed from one value to another.",
                },
            },
        },
    }
