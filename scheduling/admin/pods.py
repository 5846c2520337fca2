"""RuntimePod: read-only rows the providers keep true; the one operator write is "Forget pod"."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.utils.html import format_html

from portal.resource_admin import NONE, admin_change_url, age, label_chips, timestamp
from scheduling import pod_writer
from scheduling.models import RuntimePod

from .common import (
    bound_runs,
    capacity_text,
    entries,
    heartbeat_cell,
    phase_badge,
    ready_badge,
    reported_runs,
    run_links,
    runtime_link,
    runtime_pks,
    used_runs,
)


def annotate_page(pods) -> None:
    """Runtime pks and bound Run counts for a page of pods: two queries, not two per row."""
    pods = list(pods)
    pks = runtime_pks((pod.namespace, pod.runtime) for pod in pods)
    bound = bound_runs(pods)
    for pod in pods:
        pod._runtime_pk = pks.get((pod.namespace, pod.runtime))
        pod._bound = bound.get(pod.pk, [])


@admin.register(RuntimePod)
class RuntimePodAdmin(admin.ModelAdmin):
    change_list_template = "admin/resource/change_list.html"
    change_form_template = "admin/resource/change_form.html"
    forget_confirmation_template = "admin/scheduling/runtimepod/forget_confirmation.html"
    list_display = [
        "namespace_cell",
        "runtime_cell",
        "name_cell",
        "uid_cell",
        "ready_cell",
        "phase_cell",
        "heartbeat_cell",
        "capacity_cell",
        "used_cell",
        "active_runs_cell",
        "provider_cell",
        "host_cell",
    ]
    list_display_links = ["name_cell"]
    list_filter = ["namespace", "runtime", "ready", "provider"]
    search_fields = ["name", "runtime"]
    search_help_text = "Pod or Runtime name."
    actions = ["forget_pods"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "name",
                    "namespace",
                    "runtime_display",
                    "uid",
                    "provider",
                    "phase_display",
                    "ready_display",
                    "heartbeat_display",
                    "host_display",
                    "workspace_path",
                    "created_display",
                ]
            },
        ),
        ("Runs", {"fields": ["capacity_display", "bound_display", "reported_display"]}),
        ("Labels and annotations", {"fields": ["labels_display", "annotations_display"]}),
    ]
    readonly_fields = [field for _title, options in fieldsets for field in options["fields"]]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # "Forget pod" says what a delete means here
        return actions

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_page(changelist.result_list)  # evaluates (and caches) the page
        return changelist

    def _page_data(self, obj):
        if not hasattr(obj, "_bound"):
            annotate_page([obj])
        return obj

    # ---------------------------------------------------------------------------- list cells

    @admin.display(description="NAMESPACE", ordering="namespace")
    def namespace_cell(self, obj):
        return obj.namespace

    @admin.display(description="RUNTIME", ordering="runtime")
    def runtime_cell(self, obj):
        return runtime_link(self.admin_site, self._page_data(obj)._runtime_pk, obj.runtime)

    @admin.display(description="NAME", ordering="name")
    def name_cell(self, obj):
        return obj.name

    @admin.display(description="UID")
    def uid_cell(self, obj):
        return format_html('<code title="{}">{}</code>', obj.uid, str(obj.uid)[:8])

    @admin.display(description="READY", ordering="ready")
    def ready_cell(self, obj):
        return ready_badge(obj.ready)

    @admin.display(description="PHASE", ordering="phase")
    def phase_cell(self, obj):
        return phase_badge(obj.phase)

    @admin.display(description="HEARTBEAT", ordering="-last_heartbeat")
    def heartbeat_cell(self, obj):
        return heartbeat_cell(obj.last_heartbeat)

    @admin.display(description="CAPACITY")
    def capacity_cell(self, obj):
        return capacity_text(obj.capacity)

    @admin.display(description="USED RUNS")
    def used_cell(self, obj):
        return used_runs(len(self._page_data(obj)._bound), obj.capacity)

    @admin.display(description="ACTIVE RUNS")
    def active_runs_cell(self, obj):
        count = len(entries(obj.active_runs))
        return format_html('<span title="Runs runtimed reports executing">{}</span>', count)

    @admin.display(description="PROVIDER", ordering="provider")
    def provider_cell(self, obj):
        return obj.provider

    @admin.display(description="HOST / PID")
    def host_cell(self, obj):
        if not obj.host and obj.pid is None:
            return ""
        return f"{obj.host or '?'}/{obj.pid if obj.pid is not None else '?'}"

    # ---------------------------------------------------------------------------- detail

    @admin.display(description="runtime")
    def runtime_display(self, obj):
        return self.runtime_cell(obj)

    @admin.display(description="phase")
    def phase_display(self, obj):
        return phase_badge(obj.phase)

    @admin.display(description="ready")
    def ready_display(self, obj):
        return ready_badge(obj.ready)

    @admin.display(description="last heartbeat")
    def heartbeat_display(self, obj):
        if obj.last_heartbeat is None:
            return heartbeat_cell(None)
        return format_html(
            "{} {}", heartbeat_cell(obj.last_heartbeat), timestamp(obj.last_heartbeat)
        )

    @admin.display(description="host / pid")
    def host_display(self, obj):
        return self.host_cell(obj) or NONE

    @admin.display(description="created")
    def created_display(self, obj):
        return format_html(
            "{} <span class='k-muted'>({} ago)</span>", timestamp(obj.created), age(obj.created)
        )

    @admin.display(description="capacity / used runs")
    def capacity_display(self, obj):
        return format_html(
            "{} <span class='k-muted'>used runs</span> {}",
            capacity_text(obj.capacity) or NONE,
            self.used_cell(obj),
        )

    @admin.display(description="bound Runs (active)")
    def bound_display(self, obj):
        return run_links(self.admin_site, self._page_data(obj)._bound)

    @admin.display(description="executing (heartbeat)")
    def reported_display(self, obj):
        known = reported_runs([obj])
        runs = [
            (
                *known.get(str(e.get("uid")), (None, str(e.get("uid")))),
                f"attempt {e.get('attempt', '?')}",
            )
            for e in entries(obj.active_runs)
        ]
        return run_links(self.admin_site, runs)

    @admin.display(description="labels")
    def labels_display(self, obj):
        return label_chips(obj.labels) if obj.labels else NONE

    @admin.display(description="annotations")
    def annotations_display(self, obj):
        return label_chips(obj.annotations) if obj.annotations else NONE

    # ---------------------------------------------------------------------------- actions

    @admin.action(permissions=["delete"], description="Forget pod (remove its row)")
    def forget_pods(self, request, queryset):
        """Remove the rows only: the reconciler then fails their bound Runs PodGone."""
        pods = list(queryset)
        if request.POST.get("post") != "yes":
            bound = bound_runs(pods)
            rows = [
                {
                    "pod": pod,
                    "obj": pod,
                    "url": admin_change_url(pod, self.admin_site),
                    "heartbeat": heartbeat_cell(pod.last_heartbeat),
                    "ready": ready_badge(pod.ready),
                    "runs": run_links(self.admin_site, bound[pod.pk]) if bound[pod.pk] else "",
                }
                for pod in pods
            ]
            request.current_app = self.admin_site.name
            return TemplateResponse(
                request,
                self.forget_confirmation_template,
                {
                    **self.admin_site.each_context(request),
                    "title": "Forget Runtime Pods",
                    "subtitle": None,
                    "rows": rows,
                    "opts": self.model._meta,
                    "action_name": "forget_pods",
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                    "media": self.media,
                    "button": "Yes, forget them",
                },
            )
        self.log_deletions(request, pods)
        names = [str(pod) for pod in pods]
        pod_writer.delete_where(RuntimePod.objects.filter(pk__in=[pod.pk for pod in pods]))
        self.message_user(
            request,
            f"Forgot {len(names)} Runtime Pods: {', '.join(names)}. "
            "Their active Runs fail PodGone at the next reconcile pass.",
            messages.SUCCESS,
        )
        return None
