"""PersistentWorkspace: where its data lives (bound pod, UID, path) and who uses it at a glance;
spec, binding, the Runs using it and its cleanup in detail; Recover, Release now and the
superuser's Force remove finalizer.

Every write goes through the store (or the workspace status writer, through
``workspaces.cleanup.release``) as the logged-in user: a denied write is a message.
"""

from __future__ import annotations

import logging
import secrets

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from portal import overview
from portal.machinery import store
from portal.machinery.admission import authorize
from portal.machinery.errors import StatusError
from portal.resource_admin import (
    NONE,
    ResourceAdmin,
    TerminatingFilter,
    badge,
    code_list,
    compact,
    link_to,
    simple_table,
    timestamp,
)
from portal.resource_admin.render import age, phase_tone
from scheduling.admin.common import (
    fenced_pod_cell,
    pod_row_link,
    runtime_link,
    runtime_pks,
)
from scheduling.models import TERMINAL_PHASES, Run

from . import cleanup
from .models import WORKSPACE_CLEANUP, PersistentWorkspace, WorkspacePhase

logger = logging.getLogger(__name__)

RECOVERED_INFIX = "-recovered-"
RECOVERED_FROM = "kruntimes.io/recovered-from"
NAME_MAX = 253
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as the store's generateName
SUFFIX_LENGTH = 5
RECOVER_ATTEMPTS = 3
RUNS_SHOWN = 50


def recovered_name(name: str) -> str:
    """``<name>-recovered-<5 random chars>``, cut to fit a DNS-1123 subdomain."""
    suffix = "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))
    keep = NAME_MAX - len(RECOVERED_INFIX) - SUFFIX_LENGTH
    return f"{name[:keep].rstrip('-.')}{RECOVERED_INFIX}{suffix}"


def recovery_manifest(kind, ws: PersistentWorkspace, name: str) -> dict:
    """The same spec, namespace, labels and owners under a new name (a job workspace's copy
    still goes with its WorkflowRun); status starts empty (Pending)."""
    metadata = {
        "name": name,
        "namespace": ws.namespace,
        "labels": dict(ws.labels or {}),
        "annotations": {RECOVERED_FROM: f"{ws.name} (uid {ws.uid})"},
    }
    if ws.owner_references:
        metadata["ownerReferences"] = list(ws.owner_references)
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": metadata,
        "spec": dict(ws.spec or {}),
    }


def annotate_page(workspaces) -> None:
    """Runtime pks and active Run counts for a page of workspaces: two queries, not per row."""
    workspaces = list(workspaces)
    pks = runtime_pks((ws.namespace, ws.runtime) for ws in workspaces)
    counts: dict[tuple[str, str], int] = {}
    if workspaces:
        rows = (
            Run.objects.filter(
                namespace__in={ws.namespace for ws in workspaces},
                workspace__in={ws.name for ws in workspaces},
            )
            .exclude(phase__in=TERMINAL_PHASES)
            .values("namespace", "workspace")
            .annotate(count=Count("pk"))
            .order_by()
        )
        counts = {(row["namespace"], row["workspace"]): row["count"] for row in rows}
    for ws in workspaces:
        ws._runtime_pk = pks.get((ws.namespace, ws.runtime))
        ws._active_runs = counts.get((ws.namespace, ws.name), 0)


@admin.register(PersistentWorkspace)
class PersistentWorkspaceAdmin(ResourceAdmin):
    change_form_template = "admin/workspaces/persistentworkspace/change_form.html"
    # no generic "Remove finalizers": dropping the cleanup finalizer is the superuser's
    # Force remove finalizer, with its warning and audit entry
    actions = [
        "recover_workspaces",
        "release_workspaces",
        "force_remove_cleanup_finalizer",
        "delete_objects",
    ]
    extra_list_display = ["bound_pod_uid_cell", "path_cell", "last_used_cell", "runs_cell"]
    detail_fieldsets = [
        (
            "Binding",
            {
                "fields": [
                    "bound_pod_display",
                    "path_display",
                    "last_used_display",
                ]
            },
        ),
        (
            "Spec",
            {
                "fields": [
                    "runtime_display",
                    "mode_display",
                    "cleanup_policy_display",
                    "ttl_display",
                ]
            },
        ),
        ("Runs using it", {"fields": ["runs_display"]}),
        ("Cleanup and deletion", {"fields": ["cleanup_display", "deletion_state_display"]}),
    ]
    # the kind's printer columns, replaced by linked cells
    replaced_columns = {"column_runtime": "runtime_cell", "column_bound_pod": "bound_pod_cell"}

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        at = filters.index(TerminatingFilter) if TerminatingFilter in filters else len(filters)
        return [*filters[:at], "runtime", "cleanup_policy", *filters[at:]]

    def get_search_fields(self, request):
        return (*super().get_search_fields(request), "bound_pod", "bound_pod_uid", "uid")

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_page(changelist.result_list)  # evaluates (and caches) the page
        return changelist

    def _page_data(self, obj):
        if not hasattr(obj, "_active_runs"):
            annotate_page([obj])
        return obj

    # ---------------------------------------------------------------------------- list cells

    @admin.display(description="RUNTIME", ordering="runtime")
    def runtime_cell(self, obj):
        return runtime_link(self.admin_site, self._page_data(obj)._runtime_pk, obj.runtime)

    @admin.display(description="BOUND POD", ordering="bound_pod")
    def bound_pod_cell(self, obj):
        if not obj.bound_pod:
            return ""
        return pod_row_link(self.admin_site, self._page_data(obj)._runtime_pk, obj.bound_pod)

    @admin.display(description="BOUND POD UID")
    def bound_pod_uid_cell(self, obj):
        if not obj.bound_pod_uid:
            return ""
        return format_html('<code title="{}">{}</code>', obj.bound_pod_uid, obj.bound_pod_uid[:8])

    @admin.display(description="PATH")
    def path_cell(self, obj):
        return format_html("<code>{}</code>", obj.path)

    @admin.display(description="LAST USED", ordering="-last_used")
    def last_used_cell(self, obj):
        if obj.last_used is None:
            return format_html('<span class="k-muted">{}</span>', "never")
        return format_html(
            '<span title="{}">{} ago</span>', timestamp(obj.last_used), age(obj.last_used)
        )

    @admin.display(description="ACTIVE RUNS")
    def runs_cell(self, obj):
        count = self._page_data(obj)._active_runs
        return format_html(
            '<span title="Runs using this workspace that have not finished">{}</span>', count
        )

    # ---------------------------------------------------------------------------- detail

    def _status(self, obj) -> dict:
        return obj.status if isinstance(obj.status, dict) else {}

    def _spec(self, obj) -> dict:
        return obj.spec if isinstance(obj.spec, dict) else {}

    @admin.display(description="bound pod")
    def bound_pod_display(self, obj):
        if not obj.bound_pod:
            return NONE
        return fenced_pod_cell(
            self.admin_site,
            self._page_data(obj)._runtime_pk,
            obj.namespace,
            obj.bound_pod,
            obj.bound_pod_uid,
        )

    @admin.display(description="path")
    def path_display(self, obj):
        return format_html(
            '<code>{}</code> <span class="k-muted">(on the bound Runtime Pod)</span>', obj.path
        )

    @admin.display(description="last used")
    def last_used_display(self, obj):
        if obj.last_used is None:
            return format_html('<span class="k-muted">{}</span>', "never")
        return format_html(
            "{} <span class='k-muted'>({} ago)</span>",
            timestamp(obj.last_used),
            age(obj.last_used),
        )

    @admin.display(description="runtime")
    def runtime_display(self, obj):
        return self.runtime_cell(obj)

    @admin.display(description="mode")
    def mode_display(self, obj):
        return compact(self._spec(obj).get("mode")) or NONE

    @admin.display(description="cleanup policy")
    def cleanup_policy_display(self, obj):
        return obj.cleanup_policy

    @admin.display(description="TTL after unused")
    def ttl_display(self, obj):
        ttl = self._spec(obj).get("ttlSecondsAfterUnused")
        if ttl is None:
            return format_html('<span class="k-muted">{}</span>', "none (kept until deleted)")
        return f"{ttl}s"

    def _runs(self, obj):
        return Run.objects.filter(namespace=obj.namespace, workspace=obj.name).order_by(
            "-creation_timestamp", "name"
        )

    @admin.display(description="runs")
    def runs_display(self, obj):
        runs = list(self._runs(obj)[: RUNS_SHOWN + 1])
        if not runs:
            return NONE
        rows = [
            (
                link_to(run, run.name, self.admin_site),
                badge(run.phase, phase_tone(run.phase)),
                "" if run.is_terminal else badge("active", "info"),
                run.assigned_pod,
                format_html(
                    '<span title="{}">{}</span>',
                    timestamp(run.creation_timestamp),
                    age(run.creation_timestamp),
                ),
            )
            for run in runs[:RUNS_SHOWN]
        ]
        table = simple_table(("run", "phase", "", "pod", "age"), rows)
        if len(runs) > RUNS_SHOWN:
            total = self._runs(obj).count()
            return format_html(
                '{} <span class="k-muted">the newest {} of {}</span>', table, RUNS_SHOWN, total
            )
        return table

    @admin.display(description="cleanup")
    def cleanup_display(self, obj):
        cond = next(
            (
                c
                for c in self._status(obj).get("conditions") or []
                if isinstance(c, dict) and c.get("type") == "Cleanup"
            ),
            None,
        )
        if cond is None:
            return format_html('<span class="k-muted">{}</span>', "not requested")
        return format_html(
            "{} {} {}",
            badge(compact(cond.get("reason")) or "Cleanup", "warn"),
            compact(cond.get("message")),
            format_html(
                '<span class="k-muted">({})</span>', compact(cond.get("lastTransitionTime"))
            ),
        )

    @admin.display(description="deletion")
    def deletion_state_display(self, obj):
        holds = (
            format_html(
                ' <span class="k-muted">{} holds the object until the bound pod\'s runtimed '
                "has deleted the data</span>",
                WORKSPACE_CLEANUP,
            )
            if WORKSPACE_CLEANUP in (obj.finalizers or [])
            else ""
        )
        finalizers = code_list(obj.finalizers) if obj.finalizers else NONE
        if obj.deletion_timestamp is None:
            return format_html(
                '<span class="k-muted">not requested; finalizers</span> {}{}', finalizers, holds
            )
        return format_html(
            "{} {} <span class='k-muted'>({} ago); waiting for</span> {}{}",
            badge("Terminating", "warn"),
            timestamp(obj.deletion_timestamp),
            age(obj.deletion_timestamp),
            finalizers,
            holds,
        )

    # ---------------------------------------------------------------------------- actions

    @admin.action(permissions=["add"], description="Recover Lost workspace (as a new one)")
    def recover_workspaces(self, request, queryset):
        """A Lost workspace is never rebound (its data went with its pod): a new workspace with
        the same spec, namespace, labels and owners, created through the store as the user."""
        for ws in queryset.order_by("namespace", "name"):
            self._recover(request, ws)
        return None

    def _recover(self, request, ws: PersistentWorkspace) -> PersistentWorkspace | None:
        """Recover one workspace, telling the user what became of it; the copy, or None."""
        kind = self.resource_kind
        label = f"{ws.namespace}/{ws.name}"
        if ws.phase != WorkspacePhase.LOST:
            self.message_user(
                request,
                f"Not recovered {label}: it is {ws.phase}, not Lost (only a Lost "
                "workspace is recovered).",
                messages.WARNING,
            )
            return None
        try:
            new = self._create_recovered(kind, request, ws)
        except StatusError as exc:
            self.message_user(request, f"Could not recover {label}: {exc.message}", messages.ERROR)
            return None
        self.log_addition(request, new, f"Recovered from Lost workspace {label} ({ws.uid}).")
        logger.info(
            "%s recovered Lost workspace %s as %s/%s",
            request.user.get_username(),
            label,
            new.namespace,
            new.name,
        )
        self.message_user(
            request,
            format_html(
                "Created PersistentWorkspace {} with the same spec as {}. The Lost workspace "
                "{} is not rebound and its data is gone: Runs must use {} (it starts "
                "Pending and empty).",
                link_to(new, f"{new.namespace}/{new.name}", self.admin_site),
                label,
                label,
                new.name,
            ),
            messages.SUCCESS,
        )
        return new

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/recover/",
                wrap(self.recover_view),
                name="workspaces_persistentworkspace_recover",
            ),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        lost = obj is not None and not add and obj.phase == WorkspacePhase.LOST
        if lost and self.has_add_permission(request):
            context["recover_url"] = reverse(
                f"{self.admin_site.name}:workspaces_persistentworkspace_recover", args=[obj.pk]
            )
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def recover_view(self, request, object_id):
        """The page's Recover button: the action, for this one workspace; then the copy's page
        (or this one again, with the reason it was not made)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        ws = self.get_object(request, unquote(object_id))
        if ws is None or not self.has_add_permission(request):
            raise PermissionDenied
        made = self._recover(request, ws)
        target = made or ws
        return HttpResponseRedirect(
            reverse(
                f"{self.admin_site.name}:workspaces_persistentworkspace_change", args=[target.pk]
            )
        )

    def _create_recovered(self, kind, request, ws):
        for attempt in range(1, RECOVER_ATTEMPTS + 1):
            manifest = recovery_manifest(kind, ws, recovered_name(ws.name))
            try:
                return store.create(kind, manifest, context=self._context(request))
            except StatusError as exc:
                if exc.reason != "AlreadyExists" or attempt == RECOVER_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    @admin.action(permissions=["change"], description="Release now (start cleanup)")
    def release_workspaces(self, request, queryset):
        """Start a Bound workspace's cleanup at once, exactly as its TTL expiring would."""
        kind = self.resource_kind
        now = timezone.now()
        user = request.user.get_username()
        released, skipped, failed = [], [], []
        for ws in queryset.order_by("namespace", "name"):
            label = f"{ws.namespace}/{ws.name}"
            if ws.phase != WorkspacePhase.BOUND:
                skipped.append(f"{label} ({ws.phase})")
                continue
            try:
                # release writes the status before its one object write (the delete that
                # cleanup's finalizer then holds): ask first, so a denied user changes nothing
                context = authorize(self._context(request), kind, "delete", ws.namespace, ws.name)
                done = cleanup.release(
                    ws,
                    now,
                    reason="ReleasedByOperator",
                    message=f"released by {user} from the admin console",
                    context=context,
                )
            except StatusError as exc:
                failed.append(f"{label}: {exc.message}")
                continue
            if done is False:
                failed.append(f"{label}: it changed meanwhile; reload and try again")
                continue
            released.append(label)
            logger.info("%s released workspace %s from the admin", user, label)
        if released:
            self.message_user(
                request,
                f"Released {len(released)} workspaces: {', '.join(released)}. Their cleanup has "
                "started: no new Run may use them, and their data is deleted from the pod.",
                messages.SUCCESS,
            )
        if skipped:
            self.message_user(
                request,
                f"Not released (only a Bound workspace is released): {', '.join(skipped)}.",
                messages.WARNING,
            )
        for line in failed:
            self.message_user(request, f"Could not release {line}", messages.ERROR)
        return None

    @admin.action(permissions=["change"], description="Force remove cleanup finalizer")
    def force_remove_cleanup_finalizer(self, request, queryset):
        if not request.user.is_superuser:
            self.message_user(
                request,
                f"Only a superuser may force-remove the {WORKSPACE_CLEANUP} finalizer: it "
                "skips deleting the workspace's data on its Runtime Pod.",
                messages.ERROR,
            )
            return None
        if request.POST.get("post") != "yes":
            return self.confirm_action(
                request,
                queryset,
                action="force_remove_cleanup_finalizer",
                title="Force remove the workspace cleanup finalizer",
                intro=f"Remove the {WORKSPACE_CLEANUP} finalizer from these workspaces? "
                "Terminating ones are deleted at once.",
                warning="The cleanup the finalizer waits for is skipped: Pod-local data may be "
                "left on the bound Runtime Pod (under /workspace/persistent/<name>) and is "
                "never deleted by the portal.",
                button="Yes, remove the finalizer",
            )
        kind = self.resource_kind
        user = request.user.get_username()
        removed, without, failed = [], [], []
        for ws in queryset.order_by("namespace", "name"):
            label = f"{ws.namespace}/{ws.name}"
            if WORKSPACE_CLEANUP not in (ws.finalizers or []):
                without.append(label)
                continue
            try:
                store.remove_finalizer(kind, ws, WORKSPACE_CLEANUP, context=self._context(request))
            except StatusError as exc:
                failed.append(f"{label}: {exc.message}")
                continue
            where = f" on Runtime Pod {ws.bound_pod}" if ws.bound_pod else ""
            deleted = not PersistentWorkspace.objects.filter(pk=ws.pk).exists()
            self.log_change(
                request,
                ws,
                f"Force-removed finalizer {WORKSPACE_CLEANUP} (phase {ws.phase}); data at "
                f"{ws.path}{where} may be left behind"
                + ("; the workspace was Terminating and is deleted." if deleted else "."),
            )
            logger.warning(
                "%s force-removed finalizer %s from workspace %s (phase %s, pod %s, uid %s): "
                "Pod-local data at %s may be left",
                user,
                WORKSPACE_CLEANUP,
                label,
                ws.phase,
                ws.bound_pod or "-",
                ws.bound_pod_uid or "-",
                ws.path,
            )
            removed.append(label + (" (deleted)" if deleted else ""))
        if removed:
            self.message_user(
                request,
                f"Removed {WORKSPACE_CLEANUP} from {', '.join(removed)}. Pod-local data may be "
                "left on their pods.",
                messages.SUCCESS,
            )
        if without:
            self.message_user(
                request,
                f"No {WORKSPACE_CLEANUP} finalizer on {', '.join(without)}.",
                messages.INFO,
            )
        for line in failed:
            self.message_user(
                request, f"Could not remove the finalizer from {line}", messages.ERROR
            )
        return None


# the overview (portal.overview): PersistentWorkspaces are capacity, counted by phase
overview.place("capacity", "workspaces.persistentworkspace", order=30)
overview.register_tile(
    overview.Tile(
        "workspaces",
        "PersistentWorkspaces",
        "capacity",
        overview.phase_tile(
            PersistentWorkspace,
            "workspaces.persistentworkspace",
            "kruntimes.io",
            "persistentworkspaces",
            (WorkspacePhase.PENDING, WorkspacePhase.BOUND, WorkspacePhase.LOST),
        ),
        order=30,
    )
)
