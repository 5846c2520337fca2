"""drf-spectacular's ``/api/schema/`` draws every strict serializer with the one field-schema
generator (``portal.machinery.openapi.fields``) that the Kubernetes documents and CRDs use,
closed: a StrictSerializer refuses unknown fields, so its schema says
``additionalProperties: false`` (clients and fuzzers then know what the server takes).
Nested serializers are inlined, as in the Kubernetes documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import is_patched_serializer

from .openapi.fields import serializer_schema

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction


# drf-spectacular leaves its extension registry's __init_subclass__ unannotated
class StrictSerializerExtension(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    target_class = "portal.machinery.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        partial: bool = is_patched_serializer(self.target, direction)
        return serializer_schema(self.target, closed=True, partial=partial)
