"""``GET .../namespaces/<ns>/jobs/<name>/log``: a Job's one log (every step's output, in
order, under a header line per step), as text, like ``pods/log``.

Authorized as the ``jobs/log`` subresource with verb ``get``. ``limitBytes`` keeps the tail;
``follow=true`` streams new output until the Job ends (it takes one of the web process's
stream slots, ``portal.machinery.streams``: a 429 past the limits). Every failure is a
Kubernetes ``Status``, even when the client asked for text.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from portal.machinery import store
from portal.machinery.log_views import TEXT_PLAIN, TextLogView, parse_bool, parse_int
from portal.machinery.registry import registry

from .job_controller import log_of
from .models import Job

FOLLOW_POLL_SECONDS = 0.5


def follow(job: Job, limit_bytes: int | None, poll: float = FOLLOW_POLL_SECONDS) -> Iterator[bytes]:
    """The log so far, then what is appended, until the Job has ended and its log is quiet."""
    sent = 0
    while True:
        text = log_of(job).encode()
        if sent == 0 and limit_bytes is not None and len(text) > limit_bytes:
            sent = len(text) - limit_bytes
        if len(text) > sent:
            yield text[sent:]
            sent = len(text)
        fresh = Job.objects.filter(pk=job.pk).first()
        if fresh is None or fresh.is_finished or fresh.phase == "Unknown":
            tail = log_of(fresh or job).encode()
            if len(tail) > sent:
                yield tail[sent:]
            return
        job = fresh
        time.sleep(poll)


class JobLogView(TextLogView):
    poll_seconds = FOLLOW_POLL_SECONDS

    @property
    def kind(self):
        return registry.for_model(Job)

    @extend_schema(
        operation_id="readJobLog",
        parameters=[
            OpenApiParameter("follow", bool, description="stream new output until the Job ends"),
            OpenApiParameter("limitBytes", int, description="at most this many bytes (the tail)"),
        ],
        responses={(200, "text/plain"): OpenApiTypes.STR},
        tags=["execution.ayatori.ddupan.top/v1alpha1"],
    )
    def get(self, request, namespace: str, name: str):
        self.authorize(request, "get", namespace, name)
        params = request.query_params
        following = parse_bool(params, "follow")
        limit_bytes = parse_int(params, "limitBytes", 1)
        job = store.get_object(self.kind, namespace, name)
        if following:
            return self.follow_response(request, follow(job, limit_bytes, self.poll_seconds))
        text = log_of(job, limit_bytes=limit_bytes)
        return HttpResponse(text.encode(), content_type=TEXT_PLAIN)
