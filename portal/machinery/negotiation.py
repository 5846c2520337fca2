"""Content negotiation as kube-apiserver does it.

- A request body without a Content-Type is read with the first media type the server supports
  (JSON), not refused. The official Python client (37.x) sends custom-object creates without one.
- The answer's media type is the client's first choice in Accept order (after q), as
  kube-apiserver's ``NegotiateOutputMediaType``: kubectl asks for built-in kinds with
  ``application/vnd.kubernetes.protobuf,application/json`` and gets protobuf; DRF alone would
  rank equally specific types by the server's renderer order, and ``*/*`` (curl) would then
  get protobuf too. Protobuf is offered only by views of kinds with a protobuf message.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation

from .protobuf import MEDIA_TYPE as PROTOBUF


def first_choice(accept: str) -> tuple[str, dict[str, str]]:
    """The Accept header's most preferred media type (highest q, then first listed) and its
    parameters; ("", {}) for none."""
    ranked: list[tuple[float, int, str, dict[str, str]]] = []
    for position, part in enumerate(accept.split(",")):
        media, *raw_params = (piece.strip() for piece in part.split(";"))
        params = dict(p.partition("=")[::2] for p in raw_params if "=" in p)
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0
        if media and quality > 0:
            ranked.append((-quality, position, media.lower(), params))
    if not ranked:
        return "", {}
    _, _, media, params = min(ranked)
    return media, params


class KubernetesContentNegotiation(DefaultContentNegotiation):
    def select_parser(self, request: Any, parsers: Any) -> Any:
        if not request.content_type and parsers:
            return parsers[0]
        return super().select_parser(request, parsers)

    def select_renderer(
        self, request: Any, renderers: Any, format_suffix: str | None = None
    ) -> Any:
        protobuf = [r for r in renderers if r.media_type == PROTOBUF]
        media, params = first_choice(request.META.get("HTTP_ACCEPT", ""))
        # ``;as=Table`` asks for another kind (meta.k8s.io Table), served as JSON only
        if protobuf and media == PROTOBUF and "as" not in params:
            return protobuf[0], PROTOBUF
        others = [r for r in renderers if r.media_type != PROTOBUF]
        return super().select_renderer(request, others or renderers, format_suffix)
