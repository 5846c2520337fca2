"""``GET .../namespaces/<ns>/runs/<name>/artifacts/<artifact>``: one artifact's bytes.

Authorized as the ``runs/artifacts`` subresource with verb ``get`` (like ``runs/log``: reading
a Run does not grant its artifacts). The bytes are streamed from the store the Run's runtimed
wrote to (``status.artifactStore``), opened by the ref in ``status.artifactRefs``; a digest
recorded on the ref is sent as ``Digest``. Every failure is a Kubernetes ``Status``.
"""

from __future__ import annotations

import logging

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import JSONRenderer

from portal.machinery import errors, store
from portal.machinery.log_views import PlainTextRenderer
from portal.machinery.registry import registry
from portal.machinery.views import KubeView
from runtimed.stores import StoreError
from scheduling import cleanup
from scheduling.models import Run

log = logging.getLogger(__name__)
OCTET_STREAM = "application/octet-stream"


class OctetStreamRenderer(PlainTextRenderer):
    """Lets ``Accept: application/octet-stream`` through negotiation."""

    media_type = OCTET_STREAM
    format = "bin"
    charset = None


def artifact_ref(run: Run, name: str) -> dict | None:
    for ref in (run.status or {}).get("artifactRefs") or []:
        if isinstance(ref, dict) and ref.get("name") == name:
            return ref
    return None


def open_artifact(run: Run, name: str):
    """(ref, binary stream) of the Run's artifact ``name``, or a Status error."""
    ref = artifact_ref(run, name)
    if ref is None:
        raise errors.StatusError(
            404,
            "NotFound",
            f'Run "{run.name}" has no artifact "{name}"',
            kind="runs",
            group="kruntimes.io",
            name=run.name,
        )
    try:
        artifact_store = cleanup.run_store(run)
        if artifact_store is None:
            raise StoreError("the Run recorded no artifact store (status.artifactStore)")
        return ref, artifact_store.open(ref)
    except StoreError as exc:
        log.warning("artifact %s of Run %s/%s: %s", name, run.namespace, run.name, exc)
        raise errors.StatusError(
            503, "ServiceUnavailable", f'artifact "{name}" cannot be read from its store: {exc}'
        ) from None


def artifact_response(ref: dict, stream, name: str) -> FileResponse:
    content_type = ref.get("contentType") or OCTET_STREAM
    response = FileResponse(stream, as_attachment=True, filename=name, content_type=content_type)
    if isinstance(ref.get("sizeBytes"), int):
        response["Content-Length"] = str(ref["sizeBytes"])
    if ref.get("digest"):
        response["Digest"] = str(ref["digest"])
    return response


class RunArtifactView(KubeView):
    subresource = "artifacts"
    http_method_names = ["get", "options"]
    renderer_classes = [JSONRenderer, OctetStreamRenderer, PlainTextRenderer]

    @property
    def kind(self):
        return registry.for_model(Run)

    @extend_schema(
        operation_id="readRunArtifact",
        responses={(200, OCTET_STREAM): OpenApiTypes.BINARY},
        tags=["kruntimes.io/v1alpha1"],
    )
    def get(self, request, namespace: str, name: str, artifact: str):
        self.authorize(request, "get", namespace, name)
        run = store.get_object(self.kind, namespace, name)
        ref, stream = open_artifact(run, artifact)
        return artifact_response(ref, stream, artifact)

    def handle_exception(self, exc):
        # a Status is JSON whatever the client asked for
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)
