"""OpenAPI for the strict serializers: a StrictSerializer refuses unknown fields, so its schema
says ``additionalProperties: false`` (clients and fuzzers then know what the server takes)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension


class StrictSerializerExtension(OpenApiSerializerExtension):
    target_class = "portal.machinery.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        return schema
