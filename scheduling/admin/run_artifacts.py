"""Downloading a Run's artifacts from the admin: the bytes come from the store the Run's
runtimed wrote to (``status.artifactStore``), opened by the ref in ``status.artifactRefs``."""

from __future__ import annotations

import logging

from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpResponse
from django.urls import path, reverse

from runtimed.stores import StoreError
from scheduling import cleanup
from scheduling.models import Run

log = logging.getLogger(__name__)


def artifact_ref(run: Run, name: str) -> dict | None:
    for ref in (run.status or {}).get("artifactRefs") or []:
        if isinstance(ref, dict) and ref.get("name") == name:
            return ref
    return None


def download_url(site_name: str, run: Run, name: str) -> str:
    return reverse(f"{site_name}:scheduling_run_artifact", args=[run.pk, name])


class RunArtifactsAdminMixin:
    """Mixed into ``RunAdmin``: ``<run>/artifacts/<name>/`` streams one artifact."""

    def get_urls(self):
        return [
            path(
                "<path:object_id>/artifacts/<str:name>/",
                self.admin_site.admin_view(self.artifact_download_view),
                name="scheduling_run_artifact",
            ),
            *super().get_urls(),
        ]

    def artifact_download_view(self, request, object_id, name):
        run = self.get_object(request, unquote(object_id))
        if run is not None and not self.has_view_permission(request, run):
            raise PermissionDenied
        ref = artifact_ref(run, name) if run is not None else None
        if ref is None:
            return HttpResponse("no such artifact\n", status=404, content_type="text/plain")
        try:
            store = cleanup.run_store(run)
            if store is None:
                raise StoreError("the Run recorded no artifact store")
            stream = store.open(ref)
        except StoreError as exc:
            log.warning("artifact %s of Run %s/%s: %s", name, run.namespace, run.name, exc)
            return HttpResponse(f"{exc}\n", status=502, content_type="text/plain")
        content_type = ref.get("contentType") or "application/octet-stream"
        return FileResponse(stream, as_attachment=True, filename=name, content_type=content_type)
