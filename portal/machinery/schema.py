"""OpenAPI for the strict serializers: a StrictSerializer refuses unknown fields, so its schema
says ``additionalProperties: false`` (clients and fuzzers then know what the server takes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerExtension

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction


# drf-spectacular leaves its extension registry's __init_subclass__ unannotated
class StrictSerializerExtension(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    target_class = "portal.machinery.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        # drf-spectacular leaves _map_basic_serializer unannotated
        schema: dict[str, Any] = auto_schema._map_basic_serializer(  # type: ignore[no-untyped-call]
            self.target, direction
        )
        schema["additionalProperties"] = False
        return schema
