"""Runtime: ready pods and image in the list; the Runtime Pods table and capacity in detail."""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Count, Q
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from portal.resource_admin import NONE, ResourceAdmin, badge, simple_table
from scheduling import resources
from scheduling.kinds import runtime_image
from scheduling.models import ACTIVE_PHASES, Run, RunPhase, Runtime, RuntimePod

from .common import (
    bound_runs,
    capacity_text,
    entries,
    heartbeat_cell,
    phase_badge,
    pod_anchor,
    pod_link,
    ready_badge,
    reported_runs,
    run_links,
    used_runs,
)


def annotate_pod_counts(runtimes) -> None:
    """Set ``_pods`` = (ready, total) RuntimePod rows on each Runtime: one query for a page."""
    runtimes = list(runtimes)
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    if runtimes:
        rows = (
            RuntimePod.objects.filter(
                namespace__in={rt.namespace for rt in runtimes},
                runtime__in={rt.name for rt in runtimes},
            )
            .values("namespace", "runtime")
            .annotate(total=Count("pk"), ready=Count("pk", filter=Q(ready=True)))
            .order_by()
        )
        counts = {(row["namespace"], row["runtime"]): (row["ready"], row["total"]) for row in rows}
    for runtime in runtimes:
        runtime._pods = counts.get((runtime.namespace, runtime.name), (0, 0))


@admin.register(Runtime)
class RuntimeAdmin(ResourceAdmin):
    extra_list_display = ["image_cell"]
    detail_fieldsets = [
        ("Runtime Pods", {"fields": ["pods_display", "capacity_display", "runs_display"]}),
    ]

    def get_list_display(self, request):
        # READY counts the RuntimePod rows (status.readyReplicas is in the cell's tooltip)
        return [
            ("ready_pods_cell" if getattr(cell, "__name__", "") == "column_ready" else cell)
            for cell in super().get_list_display(request)
        ]

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_pod_counts(changelist.result_list)  # evaluates (and caches) the page
        return changelist

    def _pod_counts(self, obj) -> tuple[int, int]:
        counts = getattr(obj, "_pods", None)
        if counts is None:
            annotate_pod_counts([obj])
            counts = obj._pods
        return counts

    @admin.display(description="READY PODS")
    def ready_pods_cell(self, obj):
        ready, total = self._pod_counts(obj)
        title = (
            f"{ready} of {total} Runtime Pods ready; spec.replicas is {obj.replicas}, "
            f"status.readyReplicas {obj.ready_replicas}"
        )
        tone = "ok" if total and ready == total else ("bad" if not ready else "warn")
        return badge(f"{ready}/{total}", tone, title)

    @admin.display(description="IMAGE")
    def image_cell(self, obj):
        try:
            image = runtime_image(obj)
        except (AttributeError, IndexError, TypeError):
            image = ""
        return format_html("<code>{}</code>", image) if image else NONE

    def _pods(self, obj) -> list[RuntimePod]:
        return list(RuntimePod.objects.filter(namespace=obj.namespace, runtime=obj.name))

    @admin.display(description="pods")
    def pods_display(self, obj):
        pods = self._pods(obj)
        if not pods:
            return format_html(
                '{} <span class="k-muted">(the provider has not reported any '
                "pod for this Runtime yet)</span>",
                NONE,
            )
        bound = bound_runs(pods)
        reported = reported_runs(pods)
        rows = []
        for pod in pods:
            name = format_html(
                '<span id="{}">{}</span>', pod_anchor(pod.name), pod_link(self.admin_site, pod)
            )
            active = [
                (
                    *reported.get(str(entry.get("uid")), (None, str(entry.get("uid")))),
                    f"attempt {entry.get('attempt', '?')}",
                )
                for entry in entries(pod.active_runs)
            ]
            rows.append(
                (
                    name,
                    format_html("<code>{}</code>", pod.uid),
                    ready_badge(pod.ready),
                    phase_badge(pod.phase),
                    heartbeat_cell(pod.last_heartbeat),
                    capacity_text(pod.capacity),
                    used_runs(len(bound[pod.pk]), pod.capacity),
                    run_links(self.admin_site, active),
                )
            )
        return simple_table(
            (
                "name",
                "uid",
                "ready",
                "phase",
                "heartbeat",
                "capacity",
                "used runs",
                "active runs (heartbeat)",
            ),
            rows,
        )

    @admin.display(description="effective capacity")
    def capacity_display(self, obj):
        per_pod = resources.pod_capacity(obj.spec if isinstance(obj.spec, dict) else {}, {})
        pods = self._pods(obj)
        total: dict[str, int] = {}
        for pod in pods:
            if pod.ready and isinstance(pod.capacity, dict):
                resources.add(total, {k: v for k, v in pod.capacity.items() if isinstance(v, int)})
        ready = sum(1 for pod in pods if pod.ready)
        return format_html(
            '{} <span class="k-muted">per pod (spec.capacity.resources with defaults; a '
            "pod's <code>{}&lt;resource&gt;</code> annotations override it)</span><br>"
            '{} <span class="k-muted">across {} ready pods</span>',
            capacity_text(per_pod),
            resources.CAPACITY_ANNOTATION_PREFIX,
            capacity_text(total) or "nothing",
            ready,
        )

    @admin.display(description="runs")
    def runs_display(self, obj):
        counts = Counter(
            Run.objects.filter(namespace=obj.namespace, runtime=obj.name).values_list(
                "phase", flat=True
            )
        )
        if not counts:
            return NONE
        try:
            url = reverse(f"{self.admin_site.name}:scheduling_run_changelist")
        except NoReverseMatch:
            url = ""
        order = [
            RunPhase.PENDING,
            *ACTIVE_PHASES,
            *[p for p in RunPhase if p not in (RunPhase.PENDING, *ACTIVE_PHASES)],
        ]
        parts = []
        for phase in order:
            if counts.get(phase):
                query = urlencode(
                    {"namespace": obj.namespace, "runtime": obj.name, "phase__exact": phase}
                )
                text = f"{counts[phase]} {phase}"
                parts.append(
                    format_html('<a href="{}?{}">{}</a>', url, query, text) if url else text
                )
        return format_html_join(", ", "{}", ((part,) for part in parts))
