"""The Run page as a person reads it: what happened (phase, reason, pod, timing) and the log
first, then outputs and artifacts, then progress; spec, metadata and YAML collapsed below.
Its actions: Cancel, Retry (a new Run from the same spec, ``generateName``, linked both ways)
and Delete."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from portal.machinery import store
from portal.machinery.conditions import time_or_none
from portal.machinery.errors import StatusError
from portal.machinery.manifest import to_manifest
from portal.machinery.owner_admission import controller_labels
from portal.resource_admin import NONE, elapsed, filter_by_label, human_duration, timestamp
from scheduling.models import Run

from . import run_detail
from .common import run_links

RETRY_OF = "kruntimes.io/retry-of"  # annotation (and label, when the name fits one)
LABEL_VALUE_MAX = 63
RETRIES_SHOWN = 20

# (title, fields, open): the page's sections, top to bottom
SECTIONS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    (
        "Run",
        (
            "phase_display",
            "message_display",
            "controller_display",
            "assigned_pod_display",
            "timing_display",
            "retry_lineage_display",
        ),
        True,
    ),
    (
        "Outputs and artifacts",
        (
            "outputs_display",
            "artifacts_display",
            "artifact_inputs_display",
            "artifact_store_display",
        ),
        True,
    ),
    (
        "Progress",
        (
            "conditions_table",
            "timeline_display",
            "attempt_display",
            "retry_display",
            "ttl_display",
            "cancel_display",
        ),
        True,
    ),
)
EVENTS = "Events"  # the object's Events (portal.resource_admin.events), open, after Progress
LIVE_SECTIONS = ("Run", "Outputs and artifacts", "Progress", EVENTS)
COLLAPSED = ("Spec", "Metadata", "Labels and annotations", "Edit", "Object (YAML)")


def retry_manifest(run: Run) -> dict[str, Any]:
    """A new Run from ``run``'s spec: ``generateName``, its labels but a controller's (no
    ownerReferences either), and the link back."""
    original = to_manifest(registry_kind(), run)
    spec = copy.deepcopy(original.get("spec") or {})
    spec.pop("cancelRequested", None)
    # a controller's labels would claim the copy as its child: the retry is the user's own Run
    kept = set(original["metadata"].get("labels") or {}) - controller_labels() - {RETRY_OF}
    labels = {key: original["metadata"]["labels"][key] for key in sorted(kept)}
    if len(run.name) <= LABEL_VALUE_MAX:
        labels[RETRY_OF] = run.name
    prefix = run.name[: 253 - 12].rstrip("-.") + "-retry-"
    return {
        "apiVersion": original["apiVersion"],
        "kind": "Run",
        "metadata": {
            "generateName": prefix,
            "labels": labels,
            "annotations": {RETRY_OF: run.name},
        },
        "spec": spec,
    }


def registry_kind():
    from portal.machinery.registry import registry

    return registry.for_model(Run)


class RunPageMixin:
    """Mixed into ``RunAdmin`` before ``ResourceAdmin``."""

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        by_title = dict(fieldsets)
        ordered: list[tuple[str | None, dict]] = [
            (title, {"fields": list(fields), "classes": [] if opened else ["collapse"]})
            for title, fields, opened in SECTIONS
        ]
        if EVENTS in by_title:
            ordered.append((EVENTS, by_title[EVENTS]))
        for title in COLLAPSED:
            options = by_title.get(title)
            if options is not None:
                classes = [c for c in options.get("classes", []) if c != "collapse"]
                ordered.append((title, {**options, "classes": [*classes, "collapse"]}))
        return ordered

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/retry/", wrap(self.retry_view), name="scheduling_run_retry"),
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name="scheduling_run_cancel"),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and not add:
            context["run_page"] = {
                "live_sections": LIVE_SECTIONS,
                "active": not obj.is_terminal,
                "watch_url": watch_url(obj),
                "retry_url": reverse(f"{self.admin_site.name}:scheduling_run_retry", args=[obj.pk]),
                "cancel_url": reverse(
                    f"{self.admin_site.name}:scheduling_run_cancel", args=[obj.pk]
                ),
                "can_cancel": not obj.is_terminal
                and not obj.cancel_requested
                and self.has_change_permission(request, obj),
                "can_retry": obj.is_terminal and self.has_add_permission(request),
                "can_delete": self.has_delete_permission(request, obj),
            }
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def has_change_permission(self, request, obj=None):
        """A finished Run's page has nothing to save (its spec is fixed, it cannot be
        cancelled): it is shown read-only, without Save buttons; Retry makes a new one."""
        if obj is not None and obj.is_terminal:
            return False
        return super().has_change_permission(request, obj)  # type: ignore[misc]

    def _posted_run(self, request, object_id) -> Run:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            raise PermissionDenied
        return run

    def retry_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._posted_run(request, object_id)
        if not self.has_add_permission(request):
            raise PermissionDenied
        try:
            new = store.create(
                self.resource_kind,
                retry_manifest(run),
                namespace=run.namespace,
                context=store.WriteContext(user=request.user),
            )
        except StatusError as exc:
            self.message_user(request, f"Could not retry {run.name}: {exc.message}", messages.ERROR)
            return HttpResponseRedirect(self._change_url(run))
        self.message_user(request, f"Created {new.name}, a retry of {run.name}.", messages.SUCCESS)
        return HttpResponseRedirect(self._change_url(new))

    def cancel_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._posted_run(request, object_id)
        if not self.has_change_permission(request, run):
            raise PermissionDenied
        self.request_cancellation(
            request, Run.objects.filter(pk=run.pk), finished=lambda r: r.is_terminal, plural="Runs"
        )
        return HttpResponseRedirect(self._change_url(run))

    def _change_url(self, run: Run) -> str:
        return reverse(f"{self.admin_site.name}:scheduling_run_change", args=[run.pk])

    @admin.display(description="timing")
    def timing_display(self, obj):
        status = run_detail.as_dict(obj.status)
        created = obj.creation_timestamp
        start = time_or_none(status.get("startTime"))
        end = time_or_none(status.get("completionTime")) or obj.finished_at
        now = timezone.now()
        parts = [format_html('<span class="k-muted">created</span> {}', timestamp(created))]
        if start is not None:
            waited = max(0.0, (start - created.replace(microsecond=0)).total_seconds())
            parts.append(
                format_html(
                    '<span class="k-muted">waited</span> <strong>{}</strong>',
                    elapsed(waited),
                )
            )
            ran = max(0.0, ((end or now) - start).total_seconds())
            parts.append(
                format_html(
                    '<span class="k-muted">{}</span> <strong>{}</strong>',
                    "ran" if end else "running for",
                    elapsed(ran),
                )
            )
        elif not obj.is_terminal:
            parts.append(
                format_html(
                    '<span class="k-muted">waiting for</span> <strong>{}</strong>',
                    human_duration(max(0.0, (now - created).total_seconds())),
                )
            )
        if end is not None:
            parts.append(format_html('<span class="k-muted">finished</span> {}', timestamp(end)))
        return format_html(" · ".join(["{}"] * len(parts)), *parts)

    @admin.display(description="retries")
    def retry_lineage_display(self, obj):
        annotations = obj.annotations if isinstance(obj.annotations, dict) else {}
        parts = []
        source = annotations.get(RETRY_OF)
        if source:
            original = Run.objects.filter(namespace=obj.namespace, name=source).only("pk").first()
            parts.append(
                format_html(
                    '<span class="k-muted">retry of</span> {}',
                    run_links(self.admin_site, [(original.pk if original else None, source, "")]),
                )
            )
        retries = list(
            filter_by_label(Run.objects.filter(namespace=obj.namespace), f"{RETRY_OF}={obj.name}")
            .order_by("creation_timestamp", "pk")
            .values_list("pk", "name", "phase")[:RETRIES_SHOWN]
        )
        if retries:
            parts.append(
                format_html(
                    '<span class="k-muted">retried as</span> {}',
                    run_links(self.admin_site, retries),
                )
            )
        if not parts:
            return NONE
        return format_html(" · ".join(["{}"] * len(parts)), *parts)


def watch_url(run: Run) -> str:
    base = reverse("run-log", kwargs={"namespace": run.namespace, "name": run.name})
    collection = base.rsplit("/", 2)[0]  # .../namespaces/<ns>/runs
    return f"{collection}?watch=true&fieldSelector=metadata.name%3D{run.name}"
