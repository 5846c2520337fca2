"""The field-schema generator: each DRF field rule becomes the schema rule a client checks."""

from __future__ import annotations

from rest_framework import serializers

from portal.machinery.fields.bounded import BoundedListField
from portal.machinery.openapi.fields import field_schema, serializer_schema
from portal.machinery.serializers import (
    FreeformObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    StringMapField,
)


class Part(StrictSerializer):
    """A part of something."""

    name = StrictCharField(max_length=8, help_text="Its name.")
    count = StrictIntegerField(min_value=0, max_value=9, default=1)


class Undocumented(StrictSerializer):
    size = serializers.IntegerField(required=False)


def test_an_object_lists_its_required_fields_and_its_own_docstring_only():
    schema = serializer_schema(Part())
    assert schema["required"] == ["name"]
    assert schema["description"] == "A part of something."
    assert "description" not in serializer_schema(Undocumented())  # not StrictSerializer's


def test_strings_integers_defaults_and_descriptions():
    properties = serializer_schema(Part())["properties"]
    assert properties["name"] == {
        "type": "string",
        "maxLength": 8,
        "minLength": 1,
        "description": "Its name.",
    }
    assert properties["count"] == {
        "type": "integer",
        "format": "int32",
        "minimum": 0,
        "maximum": 9,
        "default": 1,
    }
    assert field_schema(StrictIntegerField()) == {"type": "integer", "format": "int64"}
    assert "minLength" not in field_schema(StrictCharField(allow_blank=True))
    assert field_schema(StrictCharField(allow_null=True))["nullable"] is True


def test_enums_lists_and_maps():
    assert field_schema(serializers.ChoiceField(choices=["a", "b"])) == {
        "type": "string",
        "enum": ["a", "b"],
    }
    bounded = field_schema(BoundedListField(child=StrictCharField(), max_items=3, min_length=1))
    assert bounded["maxItems"] == 3 and bounded["minItems"] == 1
    assert (
        field_schema(serializers.ListField(child=StrictCharField(), allow_empty=False))["minItems"]
        == 1
    )
    assert field_schema(StringMapField())["additionalProperties"] == {"type": "string"}
    many = field_schema(Part(many=True))
    assert many["type"] == "array" and many["items"]["required"] == ["name"]


def test_freeform_json_is_kept_unknown_fields_and_all():
    assert field_schema(FreeformObjectField()) == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert field_schema(serializers.JSONField()) == {"x-kubernetes-preserve-unknown-fields": True}


def test_closed_objects_refuse_unknown_fields_but_maps_stay_maps():
    closed = serializer_schema(Part(), closed=True)
    assert closed["additionalProperties"] is False
    assert "additionalProperties" not in serializer_schema(Part())
    assert field_schema(StringMapField(), closed=True)["additionalProperties"] == {"type": "string"}


def test_a_partial_object_requires_nothing_but_list_items_stay_whole():
    class Holder(StrictSerializer):
        part = Part()
        parts = Part(many=True)

    schema = serializer_schema(Holder(), partial=True)
    assert "required" not in schema and "required" not in schema["properties"]["part"]
    assert schema["properties"]["parts"]["items"]["required"] == ["name"]
