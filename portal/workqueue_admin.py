"""The controllers' work queues (``portal.machinery.workqueue``) for operators: every key
waiting, when it is due, which worker holds it, how often it failed in a row.

The rows are the controllers' state, so the page is read-only; an operator may have keys
reconciled now (``workqueue.add``: due now, the queue drained; a held key is reconciled once
more after its worker) or forget them (the next resync adds a key back if it is still needed).
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin, messages
from django.db.models import Count, Min, Q
from django.utils import timezone
from django.utils.html import format_html

from portal.machinery import workqueue
from portal.machinery.humanize import human_duration
from portal.models import WorkItem
from portal.resource_admin import age, timestamp


def due_text(due_at: datetime, now: datetime) -> str:
    """ "in 3s" or "overdue 2m5s" (``human_duration``, as kubectl prints ages)."""
    seconds = (due_at - now).total_seconds()
    return f"in {human_duration(seconds)}" if seconds > 0 else f"overdue {human_duration(-seconds)}"


class ClaimedFilter(admin.SimpleListFilter):
    title = "claimed"
    parameter_name = "claimed"

    def lookups(self, request, model_admin):
        return [("claimed", "By a worker"), ("free", "Free")]

    def queryset(self, request, queryset):
        free = workqueue.free(timezone.now())
        if self.value() == "claimed":
            return queryset.exclude(free)
        if self.value() == "free":
            return queryset.filter(free)
        return queryset


class FailingFilter(admin.SimpleListFilter):
    title = "failing"
    parameter_name = "failing"

    def lookups(self, request, model_admin):
        return [("yes", "Failed at least once in a row")]

    def queryset(self, request, queryset):
        return queryset.filter(failures__gt=0) if self.value() == "yes" else queryset


class OverdueFilter(admin.SimpleListFilter):
    title = "overdue"
    parameter_name = "overdue"

    def lookups(self, request, model_admin):
        return [("yes", "Due and no worker holds it")]

    def queryset(self, request, queryset):
        if self.value() != "yes":
            return queryset
        now = timezone.now()
        return queryset.filter(workqueue.free(now), due_at__lt=now)


def queue_summary(now: datetime) -> list[dict]:
    """Per queue: keys waiting (free), claimed, failing, and how long the oldest due free key
    has waited ("" when none is overdue)."""
    free = workqueue.free(now)
    rows = (
        WorkItem.objects.values("queue")
        .annotate(
            waiting=Count("pk", filter=free),
            claimed=Count("pk", filter=~free),
            failing=Count("pk", filter=Q(failures__gt=0)),
            oldest_due=Min("due_at", filter=free & Q(due_at__lt=now)),
        )
        .order_by("queue")
    )
    return [
        {
            **row,
            "overdue": human_duration((now - row["oldest_due"]).total_seconds())
            if row["oldest_due"] is not None
            else "",
        }
        for row in rows
    ]


@admin.register(WorkItem)
class WorkItemAdmin(admin.ModelAdmin):
    list_display = [
        "queue_cell",
        "key_cell",
        "due_cell",
        "claimed_cell",
        "dirty_cell",
        "failures_cell",
        "added_cell",
    ]
    list_display_links = ["key_cell"]
    list_filter = ["queue", ClaimedFilter, FailingFilter, OverdueFilter]
    search_fields = ["key"]
    search_help_text = "Key (a UID, namespace/name, a queue's own key)."
    ordering = ("due_at", "pk")
    actions = ["reconcile_now", "forget"]
    fields = ["queue", "key", "due_at", "claimed_until", "dirty", "failures", "added_at"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # the controllers' state: acted on only through the actions

    def has_reconcile_permission(self, request):
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # "Forget" says what a delete means here
        return actions

    def changelist_view(self, request, extra_context=None):
        context = {"queue_summary": queue_summary(timezone.now()), **(extra_context or {})}
        return super().changelist_view(request, extra_context=context)

    # ---------------------------------------------------------------------------- list cells

    @admin.display(description="QUEUE", ordering="queue")
    def queue_cell(self, obj):
        return obj.queue

    @admin.display(description="KEY", ordering="key")
    def key_cell(self, obj):
        return format_html("<code>{}</code>", obj.key or '""')

    @admin.display(description="DUE", ordering="due_at")
    def due_cell(self, obj):
        return format_html(
            '<span title="{}">{}</span>',
            timestamp(obj.due_at),
            due_text(obj.due_at, timezone.now()),
        )

    @admin.display(description="CLAIMED", ordering="claimed_until")
    def claimed_cell(self, obj):
        now = timezone.now()
        if obj.claimed_until is None or obj.claimed_until < now:
            return format_html('<span class="k-muted">{}</span>', "free")
        left = human_duration((obj.claimed_until - now).total_seconds())
        return format_html(
            "by a worker until {} <span class='k-muted'>({} left)</span>",
            timestamp(obj.claimed_until),
            left,
        )

    @admin.display(description="DIRTY", boolean=True, ordering="dirty")
    def dirty_cell(self, obj):
        return obj.dirty

    @admin.display(description="FAILURES", ordering="failures")
    def failures_cell(self, obj):
        return obj.failures

    @admin.display(description="ADDED", ordering="added_at")
    def added_cell(self, obj):
        return format_html(
            '<span title="{}">{} ago</span>', timestamp(obj.added_at), age(obj.added_at)
        )

    # ---------------------------------------------------------------------------- actions

    @admin.action(permissions=["reconcile"], description="Reconcile now")
    def reconcile_now(self, request, queryset):
        """Due now and the queue drained; a held key is reconciled once more after."""
        items = list(queryset.order_by("queue", "key"))
        by_queue: dict[str, list[str]] = {}
        for row in items:
            by_queue.setdefault(row.queue, []).append(row.key)
        for queue, keys in by_queue.items():
            workqueue.add_many(queue, keys)
        self.message_user(
            request,
            f"{len(items)} keys are due now: {', '.join(str(row) for row in items)}",
            messages.SUCCESS,
        )

    @admin.action(permissions=["delete"], description="Forget (the next resync adds it back)")
    def forget(self, request, queryset):
        items = list(queryset.order_by("queue", "key"))
        self.log_deletions(request, items)
        WorkItem.objects.filter(pk__in=[row.pk for row in items]).delete()
        self.message_user(
            request,
            f"Forgot {len(items)} keys: {', '.join(str(row) for row in items)}; "
            "a controller's resync adds back the keys it still needs.",
            messages.SUCCESS,
        )
