"""``/openapi/v2``: the OpenAPI v2 document kubectl reads for its client-side schema
validation, which it uses only where the server cannot validate for it: the items of a
``v1 List`` (``kubectl apply -f`` of a List; kubectl's query-param verifier treats the List
kind as never supporting ``fieldValidation``). kubectl asks for it as gnostic protobuf only
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``), so a JSON-only answer is a
406 that fails the whole apply.

The document names no definitions: kubectl skips client-side validation of a kind its v2
document does not describe (and keeps its compiled-in patch strategies for client-side apply),
and this server validates every item of the List strictly itself. ``/openapi/v3`` stays the
full description (``kubectl explain``, field validation)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, HttpResponseBase
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request

from ..negotiation import first_choice
from ..views import KubeView

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# What kube-openapi answers it with (and accepts too): Go's mime parser refuses the "@".
PROTOBUF_V2_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
SWAGGER = "2.0"
# gnostic openapi_v2.Document with only field 1 (``string swagger``) set: tag (1 << 3 | 2),
# the length, the bytes. Every other field is absent (empty), as protobuf allows.
PROTOBUF_DOCUMENT = bytes([0x0A, len(SWAGGER)]) + SWAGGER.encode()
JSON_DOCUMENT: dict[str, Any] = {
    "swagger": SWAGGER,
    "info": {"title": "Kubernetes", "version": "v2"},
    "paths": {},
    "definitions": {},
}


class ProtobufV2Renderer(BaseRenderer):
    """Lets DRF's negotiation accept kubectl's Accept header; the view writes the body."""

    media_type = PROTOBUF_V2
    format = "pb"

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> bytes:
        return PROTOBUF_DOCUMENT


class ProtobufV2AnswerRenderer(ProtobufV2Renderer):
    media_type = PROTOBUF_V2_ANSWER


class OpenAPIV2View(KubeView):
    renderer_classes = [JSONRenderer, ProtobufV2Renderer, ProtobufV2AnswerRenderer]
    schema = None  # not itself part of /api/schema/

    def get(self, request: Request) -> HttpResponseBase:
        media, _ = first_choice(request.META.get("HTTP_ACCEPT", ""))
        if media in (PROTOBUF_V2, PROTOBUF_V2_ANSWER):
            response = HttpResponse(PROTOBUF_DOCUMENT, content_type=PROTOBUF_V2_ANSWER)
        else:
            response = HttpResponse(
                JSONRenderer().render(JSON_DOCUMENT), content_type="application/json"
            )
        response["Vary"] = "Accept"
        return response
