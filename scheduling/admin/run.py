"""Run: why it waits or failed at a glance, its spec and timeline in detail, and Cancel."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from portal.machinery.conditions import time_or_none
from portal.resource_admin import (
    NONE,
    ResourceAdmin,
    TerminatingFilter,
    badge,
    compact,
    elapsed,
    timestamp,
)
from scheduling.models import ACTIVE_PHASES, Run, RunPhase, Runtime

from . import run_data, run_detail, run_function
from .common import (
    fenced_pod_cell,
    pod_row_link,
    runtime_link,
    runtime_pks,
)
from .filters import RuntimeFilter
from .run_artifacts import download_url
from .run_filters import RunPhaseFilter
from .run_log import RunLogAdminMixin
from .run_page import RunPageMixin

MESSAGE_PREVIEW = 160


class AssignedPodFilter(admin.SimpleListFilter):
    title = "assigned pod"
    parameter_name = "assigned"

    def lookups(self, request, model_admin):
        return (("yes", "Has a pod"), ("no", "None"))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.exclude(assigned_pod="")
        if self.value() == "no":
            return queryset.filter(assigned_pod="")
        return queryset


class FinishedWithinFilter(admin.SimpleListFilter):
    """Runs that finished in the last hour or day (the ``finished_at`` index)."""

    title = "finished"
    parameter_name = "finished"
    WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(days=1)}

    def lookups(self, request, model_admin):
        return (("1h", "in the last hour"), ("24h", "in the last 24 h"))

    def queryset(self, request, queryset):
        window = self.WINDOWS.get(self.value() or "")
        if window is None:
            return queryset
        return queryset.filter(finished_at__gte=timezone.now() - window)


class OutcomeFilter(admin.SimpleListFilter):
    """Active (bound to a pod) or failed (Failed or Timeout): what the overview counts."""

    title = "outcome"
    parameter_name = "outcome"

    def lookups(self, request, model_admin):
        return (("active", "Active (Scheduled, Running)"), ("failed", "Failed or Timeout"))

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.filter(phase__in=ACTIVE_PHASES)
        if self.value() == "failed":
            return queryset.filter(phase__in=(RunPhase.FAILED, RunPhase.TIMEOUT))
        return queryset


class ReasonFilter(admin.SimpleListFilter):
    """``status.reason`` equal to the value (the overview's failures link here)."""

    title = "reason"
    parameter_name = "reason"

    def lookups(self, request, model_admin):
        value = self.value()
        return ((value, value),) if value else ()

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(status__reason=self.value())


def annotate_runtime_pks(runs) -> None:
    """Set ``_runtime_pk`` on each Run of a page (for links to its Runtime): one query."""
    runs = list(runs)
    pks = runtime_pks((run.namespace, run.runtime) for run in runs)
    for run in runs:
        run._runtime_pk = pks.get((run.namespace, run.runtime))


def preview(text: str) -> str:
    return text if len(text) <= MESSAGE_PREVIEW else text[: MESSAGE_PREVIEW - 1] + "…"


@admin.register(Run)
class RunAdmin(RunPageMixin, RunLogAdminMixin, ResourceAdmin):  # + page order, live Log
    actions = ["cancel_runs", "delete_objects", "remove_finalizers"]
    ordering = ("-creation_timestamp", "-pk")  # newest first
    extra_list_display = ["duration_cell"]
    detail_fieldsets = [
        (
            "Progress",
            {
                "fields": [
                    "assigned_pod_display",
                    "attempt_display",
                    "message_display",
                    "timeline_display",
                ]
            },
        ),
        (
            "Data",
            {
                "fields": [
                    "outputs_display",
                    "artifacts_display",
                    "artifact_inputs_display",
                    "artifact_store_display",
                ]
            },
        ),
        (
            "Spec",
            {
                "fields": [
                    "runtime_display",
                    "source_display",
                    "mode_display",
                    "env_display",
                    "timeout_display",
                    "affinity_display",
                    "workspace_display",
                    "requests_display",
                    "retry_display",
                    "ttl_display",
                    "cancel_display",
                ]
            },
        ),
    ]
    # the kind's printer columns, replaced by linked cells
    replaced_columns = {
        "column_runtime": "runtime_cell",
        "column_pod": "pod_cell",
        "column_reason": "message_cell",
    }

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None and obj.is_function:  # after Status: what a caller needs first
            at = next((i + 1 for i, (title, _) in enumerate(fieldsets) if title == "Status"), 1)
            fieldsets = [
                *fieldsets[:at],
                ("Function", {"fields": run_function.FIELDS}),
                *fieldsets[at:],
            ]
        return fieldsets

    def _figures(self, obj):
        if getattr(obj, "_function_figures", None) is None:
            obj._function_figures = (run_function.stats(obj),)
        return obj._function_figures[0]

    @admin.display(description="endpoint")
    def endpoint_display(self, obj):
        return run_function.endpoint(obj)

    @admin.display(description="ready since")
    def ready_since_display(self, obj):
        return run_function.ready_since(obj)

    @admin.display(description="invocations")
    def invocations_display(self, obj):
        return run_function.invocations(obj, self._figures(obj))

    @admin.display(description="errors")
    def errors_display(self, obj):
        return run_function.errors(self._figures(obj))

    def example_manifest(self, namespace: str) -> dict:
        """Add Run starts from a Run that works as it is: a hello step on a Runtime of the
        namespace (the first one, else ``bash``), a fresh name each time (generateName)."""
        runtime = Runtime.objects.filter(namespace=namespace).order_by("name").first()
        return {
            "apiVersion": self.resource_kind.api_version,
            "kind": "Run",
            "metadata": {"generateName": "hello-", "namespace": namespace},
            "spec": {
                "runtime": runtime.name if runtime else "bash",
                "source": {"inline": 'echo "hello from $KRUNTIME_POD_NAME"\n'},
                "mode": {"task": {}},
                "timeout": "1m",
            },
        }

    def condition_tone_for(self, obj):
        return run_detail.run_condition_tone(obj.is_terminal)

    def get_list_filter(self, request):
        filters = [RunPhaseFilter if f == "phase" else f for f in super().get_list_filter(request)]
        at = filters.index(TerminatingFilter) if TerminatingFilter in filters else len(filters)
        return [
            *filters[:at],
            RuntimeFilter,
            AssignedPodFilter,
            OutcomeFilter,
            FinishedWithinFilter,
            ReasonFilter,
            *filters[at:],
        ]

    def get_search_fields(self, request):
        return (*super().get_search_fields(request), "assigned_pod")

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_runtime_pks(changelist.result_list)  # evaluates (and caches) the page
        return changelist

    def _runtime_pk(self, obj):
        if not hasattr(obj, "_runtime_pk"):
            annotate_runtime_pks([obj])
        return obj._runtime_pk

    # ---------------------------------------------------------------------------- list cells

    @admin.display(description="RUNTIME", ordering="runtime")
    def runtime_cell(self, obj):
        return runtime_link(self.admin_site, self._runtime_pk(obj), obj.runtime)

    @admin.display(description="POD", ordering="assigned_pod")
    def pod_cell(self, obj):
        if not obj.assigned_pod:
            return ""
        return pod_row_link(self.admin_site, self._runtime_pk(obj), obj.assigned_pod)

    @admin.display(description="DURATION")
    def duration_cell(self, obj):
        status = run_detail.as_dict(obj.status)
        start = time_or_none(status.get("startTime"))
        if start is None:
            return ""
        end = time_or_none(status.get("completionTime"))
        if end is None and obj.is_terminal:
            return ""
        text = elapsed(((end or timezone.now()) - start).total_seconds())
        title = f"{timestamp(start)} → {timestamp(end) if end else 'now'}"
        if end is None:
            return format_html(
                '<span title="{}">{} <span class="k-muted">so far</span></span>', title, text
            )
        return format_html('<span title="{}">{}</span>', title, text)

    @admin.display(description="REASON / MESSAGE")
    def message_cell(self, obj):
        """Why a Run waits (the scheduler's ``0/3 pods: ...``) or how it ended."""
        status = run_detail.as_dict(obj.status)
        reason, message = compact(status.get("reason")), compact(status.get("message"))
        parts = []
        if obj.cancel_requested and not obj.is_terminal:
            parts.append(badge("cancel requested", "warn"))
        if reason and obj.phase != RunPhase.SUCCEEDED:
            parts.append(badge(reason, "bad" if obj.is_terminal else "info", message))
        if message:
            parts.append(format_html('<span title="{}">{}</span>', message, preview(message)))
        elif obj.phase == RunPhase.PENDING:
            parts.append(
                format_html('<span class="k-muted">{}</span>', "waiting for the scheduler")
            )
        return format_html_join(" ", "{}", ((part,) for part in parts))

    # ---------------------------------------------------------------------------- detail

    @admin.display(description="assigned pod")
    def assigned_pod_display(self, obj):
        if not obj.assigned_pod:
            return NONE
        return fenced_pod_cell(
            self.admin_site,
            self._runtime_pk(obj),
            obj.namespace,
            obj.assigned_pod,
            obj.assigned_pod_uid,
        )

    @admin.display(description="attempt")
    def attempt_display(self, obj):
        retry = run_detail.as_dict(run_detail.as_dict(obj.spec).get("retryPolicy"))
        limit = retry.get("maxAttempts")
        return f"{obj.attempt} of {limit}" if limit else str(obj.attempt)

    @admin.display(description="reason / message")
    def message_display(self, obj):
        status = run_detail.as_dict(obj.status)
        reason, message = compact(status.get("reason")), compact(status.get("message"))
        exit_code = status.get("exitCode")
        if exit_code is not None and f"exit code {exit_code}" in message:
            exit_code = None  # the message says it already (runtimed's does)
        if not (reason or message or exit_code is not None):
            return NONE
        return format_html(
            '{} <span class="k-pre">{}</span>{}',
            badge(reason, "bad" if obj.is_terminal and obj.phase != RunPhase.SUCCEEDED else "info")
            if reason
            else "",
            message,
            format_html(' <span class="k-muted">exit code</span> <code>{}</code>', exit_code)
            if exit_code is not None
            else "",
        )

    @admin.display(description="timeline")
    def timeline_display(self, obj):
        return run_detail.timeline(obj)

    def _spec(self, obj) -> dict:
        return run_detail.as_dict(obj.spec)

    @admin.display(description="runtime")
    def runtime_display(self, obj):
        return runtime_link(self.admin_site, self._runtime_pk(obj), obj.runtime)

    @admin.display(description="source")
    def source_display(self, obj):
        return run_detail.source_summary(self._spec(obj).get("source"))

    @admin.display(description="mode")
    def mode_display(self, obj):
        return run_detail.mode_summary(self._spec(obj).get("mode"))

    @admin.display(description="env")
    def env_display(self, obj):
        return run_detail.env_names(self._spec(obj).get("env"))

    @admin.display(description="timeout")
    def timeout_display(self, obj):
        return compact(self._spec(obj).get("timeout")) or NONE

    @admin.display(description="affinity")
    def affinity_display(self, obj):
        return run_detail.affinity_table(self._spec(obj).get("affinity"))

    @admin.display(description="workspace")
    def workspace_display(self, obj):
        return run_detail.workspace_summary(
            self._spec(obj).get("workspace"), obj.namespace, self.admin_site
        )

    @admin.display(description="requests")
    def requests_display(self, obj):
        return run_detail.requests_summary(self._spec(obj))

    @admin.display(description="outputs")
    def outputs_display(self, obj):
        return run_data.outputs_table(obj.status)

    @admin.display(description="artifacts")
    def artifacts_display(self, obj):
        return run_data.artifacts_table(
            run_detail.as_dict(obj.status).get("artifactRefs"),
            download=lambda name: download_url(obj, name),
        )

    @admin.display(description="artifact inputs")
    def artifact_inputs_display(self, obj):
        return run_data.artifact_inputs_table(obj.spec)

    @admin.display(description="artifact store")
    def artifact_store_display(self, obj):
        return run_data.store_summary(obj.status)

    @admin.display(description="retries")
    def retry_display(self, obj):
        waiting = obj.not_before if obj.phase == RunPhase.PENDING else None
        return run_data.retry_summary(obj.spec, waiting)

    @admin.display(description="TTL after finished")
    def ttl_display(self, obj):
        return run_data.ttl_summary(obj.spec, obj.finished_at, obj.ttl_after_finished)

    @admin.display(description="cancel requested")
    def cancel_display(self, obj):
        return badge("yes", "warn") if obj.cancel_requested else "no"

    # ---------------------------------------------------------------------------- actions

    @admin.action(permissions=["change"], description="Cancel")
    def cancel_runs(self, request, queryset):
        """Ask each unfinished Run to stop (``spec.cancelRequested``, through the store)."""
        self.request_cancellation(
            request, queryset, finished=lambda run: run.is_terminal, plural="Runs"
        )
