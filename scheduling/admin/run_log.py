"""The Run change page's live "Log" panel and the two small views behind it.

``<pk>/log/?attempt=N&after=OFFSET`` answers ``{"text", "next", "truncatedBytes", "finished"}``
for the panel's polling; ``<pk>/log/download/?attempt=N`` is the attempt's log as a text file.
Both need a login and the view permission on Runs. ``RunLogAdminMixin`` adds the URLs and the
panel's context; the panel itself is ``admin/scheduling/run/log_panel.html``.
"""

from __future__ import annotations

from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse
from django.urls import path, reverse

from portal.machinery.log_views import BadQuery, query_int
from scheduling import logs
from scheduling.models import Run

POLL_MS = 1000


def requested_attempt(run: Run, params) -> int:
    attempt = query_int(params, "attempt", 1) or run.attempt
    if attempt > run.attempt:
        raise BadQuery("attempt", f"must be at most {run.attempt}")
    return attempt


def attempt_finished(run: Run, attempt: int) -> bool:
    return attempt < run.attempt or run.is_terminal


def panel_context(admin_site, run: Run) -> dict:
    name = admin_site.name
    return {
        "json_url": reverse(f"{name}:scheduling_run_log", args=[run.pk]),
        "download_url": reverse(f"{name}:scheduling_run_log_download", args=[run.pk]),
        "attempt": run.attempt,
        "attempts": list(range(run.attempt, 0, -1)),
        "poll_ms": POLL_MS,
        "active": not run.is_terminal,  # the page's status goes stale when it ends
    }


class RunLogAdminMixin:
    """Mixed into ``RunAdmin`` before ``ResourceAdmin``."""

    change_form_template = "admin/scheduling/run/change_form.html"

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/log/download/",
                wrap(self.log_download_view),
                name="scheduling_run_log_download",
            ),
            path("<path:object_id>/log/", wrap(self.log_json_view), name="scheduling_run_log"),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and not add:
            context["run_log"] = panel_context(self.admin_site, obj)
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def _viewable_run(self, request, object_id) -> Run | None:
        run = self.get_object(request, unquote(object_id))
        if run is not None and not self.has_view_permission(request, run):
            raise PermissionDenied
        return run

    def log_json_view(self, request, object_id):
        run = self._viewable_run(request, object_id)
        if run is None:
            return JsonResponse({"error": "no such Run"}, status=404)
        try:
            attempt = requested_attempt(run, request.GET)
            after = query_int(request.GET, "after", 0)
        except BadQuery as exc:
            return JsonResponse({"error": str(exc)}, status=400)
        piece = logs.read_log(run, attempt, after_offset=after)
        return JsonResponse(
            {
                "text": piece.text,
                "next": piece.next_offset,
                "truncatedBytes": piece.truncated_bytes,
                "finished": attempt_finished(run, attempt),
            }
        )

    def log_download_view(self, request, object_id):
        run = self._viewable_run(request, object_id)
        if run is None:
            return HttpResponse("no such Run\n", status=404, content_type="text/plain")
        try:
            attempt = requested_attempt(run, request.GET)
        except BadQuery as exc:
            return HttpResponse(f"{exc}\n", status=400, content_type="text/plain")
        response = HttpResponse(
            logs.read_log(run, attempt).text.encode(), content_type="text/plain; charset=utf-8"
        )
        filename = f"{run.namespace}-{run.name}-attempt-{attempt}.log"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
