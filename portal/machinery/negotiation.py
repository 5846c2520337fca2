"""Content negotiation as kube-apiserver does it: a request body without a Content-Type is read
with the first media type the server supports (JSON), not refused. The official Python client
(37.x) sends custom-object creates without one."""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation


class KubernetesContentNegotiation(DefaultContentNegotiation):
    def select_parser(self, request: Any, parsers: Any) -> Any:
        if not request.content_type and parsers:
            return parsers[0]
        return super().select_parser(request, parsers)
