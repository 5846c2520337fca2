"""Deletion with Kubernetes semantics (finalizers, Terminating) and the force-finalize action.

Django's ``delete_selected`` is replaced: it would delete rows behind the store's back. A forced
finalizer removal skips a controller's cleanup, so it is audited (a ``LogEntry`` naming the
finalizers and the user, and a warning in the log); a kind whose finalizers guard something
that outlives the object restricts it to superusers (``force_finalize_superuser_only``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.managed_fields import CONSOLE_MANAGER

from .render import admin_change_url

logger = logging.getLogger(__name__)


class DeletionMixin:
    """The single-object delete page and ``delete_model`` through ``store.delete``."""

    def _context(self, request) -> store.WriteContext:
        return store.WriteContext(user=request.user, field_manager=CONSOLE_MANAGER)

    def _delete(self, request, obj) -> tuple[bool | None, str]:
        """store.delete one object: (gone, error message)."""
        try:
            _, gone = store.delete(
                self.resource_kind,
                getattr(obj, "namespace", None),
                obj.name,
                context=self._context(request),
            )
        except StatusError as exc:
            return None, exc.message
        return gone, ""

    def delete_model(self, request, obj):
        gone, error = self._delete(request, obj)
        request._resource_delete_result = (gone, error)

    def delete_queryset(self, request, queryset):
        for obj in list(queryset):
            self._delete(request, obj)

    def render_delete_form(self, request, context):
        obj = context.get("object")
        if obj is not None:
            context["blocking_finalizers"] = store.blocking_finalizers(self.resource_kind, obj)
        return super().render_delete_form(request, context)

    def response_delete(self, request, obj_display, obj_id):
        gone, error = getattr(request, "_resource_delete_result", (True, ""))
        if gone:
            return super().response_delete(request, obj_display, obj_id)
        opts = self.model._meta
        if error:
            self.message_user(request, f"Could not delete {obj_display}: {error}", messages.ERROR)
        else:
            obj = self.model.objects.filter(pk=obj_id).first()
            waiting = store.blocking_finalizers(self.resource_kind, obj) if obj else []
            self.message_user(
                request,
                f"The {opts.verbose_name} “{obj_display}” is Terminating: it stays "
                f"until its finalizers are removed ({', '.join(map(str, waiting))}).",
                messages.WARNING,
            )
        if self.model.objects.filter(pk=obj_id).exists():
            return HttpResponseRedirect(
                reverse(
                    f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_change",
                    args=[obj_id],
                )
            )
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_changelist")
        )


class ActionsMixin(DeletionMixin):
    """The ``delete_objects`` and ``remove_finalizers`` actions and their confirmation page."""

    # True: only a superuser is offered (and may run) the forced finalizer removal
    force_finalize_superuser_only = False
    force_finalize_label = "Remove finalizers (force)"
    force_finalize_warning = (
        "This skips the cleanup the finalizers' controllers would do (e.g. deleting workspace "
        "data or external resources). Objects that are Terminating are removed immediately."
    )

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # Django's would delete rows behind the store
        if self.force_finalize_superuser_only and not request.user.is_superuser:
            actions.pop("remove_finalizers", None)
        if "remove_finalizers" in actions:
            func, name, _description = actions["remove_finalizers"]
            actions["remove_finalizers"] = (func, name, self.force_finalize_label)
        if "delete_objects" in actions:
            func, name, _description = actions["delete_objects"]
            actions["delete_objects"] = (func, name, self.delete_action_label)
        return actions

    def request_cancellation(self, request, queryset, *, finished, plural: str) -> None:
        """Merge-patch ``spec.cancelRequested: true`` on each object through the store as the
        logged-in user, and say what happened; ``finished(obj)`` ones are skipped (there is
        nothing to cancel), as are those already asked. Kinds with a one-way cancelRequested
        (Run, WorkflowRun) share this."""
        cancelled, skipped, already, failed = [], [], [], []
        for obj in queryset.order_by("namespace", "name"):
            label = f"{obj.namespace}/{obj.name}"
            if finished(obj):
                skipped.append(f"{label} ({obj.phase})")
            elif obj.cancel_requested:
                already.append(label)
            else:
                try:
                    store.patch(
                        self.resource_kind,
                        obj.namespace,
                        obj.name,
                        {"spec": {"cancelRequested": True}},
                        context=self._context(request),
                    )
                except StatusError as exc:
                    failed.append(f"{label}: {exc.message}")
                else:
                    cancelled.append(label)
        report = [
            (cancelled, messages.SUCCESS, f"Requested cancellation of {len(cancelled)} {plural}: "),
            (skipped, messages.WARNING, f"Skipped {len(skipped)} finished {plural}: "),
            (already, messages.INFO, "Cancellation was already requested for "),
        ]
        for labels, level, text in report:
            if labels:
                self.message_user(request, f"{text}{', '.join(labels)}.", level)
        for line in failed:
            self.message_user(request, f"Could not cancel {line}", messages.ERROR)

    def confirm_action(
        self,
        request,
        queryset,
        *,
        action: str,
        title: str,
        intro: str,
        warning: str = "",
        button: str = "Yes, I’m sure",
        notes: Callable[[Any], list[str]] | None = None,
    ):
        """Django's intermediate-page pattern: the action runs when ``post=yes`` comes back.
        ``notes(obj)``: lines said under each object (what the action does to that one)."""
        kind = self.resource_kind
        rows = []
        for obj in queryset:
            rows.append(
                {
                    "obj": obj,
                    "url": admin_change_url(obj, self.admin_site),
                    "finalizers": store.blocking_finalizers(kind, obj),
                    "terminating": obj.deletion_timestamp is not None,
                    "notes": notes(obj) if notes is not None else [],
                }
            )
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": None,
            "intro": intro,
            "warning": warning,
            "button": button,
            "rows": rows,
            "queryset": queryset,
            "opts": self.model._meta,
            "action_name": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.action_confirmation_template, context)

    @admin.action(permissions=["delete"], description="Delete (Kubernetes semantics)")
    def delete_objects(self, request, queryset):
        opts = self.model._meta
        if request.POST.get("post") != "yes":
            return self.confirm_action(
                request,
                queryset,
                action="delete_objects",
                title=f"Delete {opts.verbose_name_plural}",
                intro=f"Delete these {opts.verbose_name_plural}? Objects with finalizers are "
                "marked Terminating and stay until their finalizers are removed; "
                "dependents are garbage-collected through their owner references.",
            )
        gone, terminating, failed = [], [], []
        for obj in list(queryset):
            label = str(obj)
            done, error = self._delete(request, obj)
            if error:
                failed.append(f"{label}: {error}")
            elif done:
                gone.append(label)
            else:
                terminating.append(label)
        self._report_deleted(request, gone, terminating, failed)
        return None

    def _report_deleted(self, request, gone, terminating, failed) -> None:
        plural = self.model._meta.verbose_name_plural
        if gone:
            self.message_user(
                request, f"Deleted {len(gone)} {plural}: {', '.join(gone)}.", messages.SUCCESS
            )
        if terminating:
            self.message_user(
                request,
                f"{len(terminating)} {plural} are "
                f"Terminating, waiting for finalizers: {', '.join(terminating)}.",
                messages.WARNING,
            )
        for line in failed:
            self.message_user(request, f"Could not delete {line}", messages.ERROR)

    def force_finalize_patch(self, obj) -> dict:
        """The merge patch that releases every finalizer holding ``obj``."""
        return {"metadata": {"finalizers": None}}

    def force_finalize_consequences(self, obj) -> list[str]:
        """What removing ``obj``'s finalizers skips, one plain line each: shown on the
        confirmation page and written into the audit entry."""
        return []

    @admin.action(permissions=["change"], description="Remove finalizers (force)")
    def remove_finalizers(self, request, queryset):
        opts = self.model._meta
        if self.force_finalize_superuser_only and not request.user.is_superuser:
            self.message_user(
                request,
                f"Only a superuser may force-remove the finalizers of {opts.verbose_name_plural}: "
                "it skips the cleanup or protection they stand for.",
                messages.ERROR,
            )
            return None
        if request.POST.get("post") != "yes":
            return self.confirm_action(
                request,
                queryset,
                action="remove_finalizers",
                title=f"Remove finalizers from {opts.verbose_name_plural}",
                intro="Remove every finalizer from these objects?",
                warning=self.force_finalize_warning,
                button="Yes, remove the finalizers",
                notes=self.force_finalize_consequences,
            )
        kind = self.resource_kind
        released, removed, failed = [], [], []
        for obj in list(queryset):
            label = str(obj)
            before = store.blocking_finalizers(kind, obj)
            if not before:
                continue
            skipped = self.force_finalize_consequences(obj)
            try:
                store.patch(
                    kind,
                    getattr(obj, "namespace", None),
                    obj.name,
                    self.force_finalize_patch(obj),
                    context=self._context(request),
                )
            except StatusError as exc:
                failed.append(f"{label}: {exc.message}")
                continue
            after = self.model.objects.filter(pk=obj.pk).first()
            gone = [
                f
                for f in before
                if after is None or f not in store.blocking_finalizers(kind, after)
            ]
            self._audit_finalizers_removed(request, obj, gone, skipped, deleted=after is None)
            (released if after is not None else removed).append(label)
        self._report_finalizers_removed(request, released, removed, failed)
        return None

    def _audit_finalizers_removed(self, request, obj, gone, skipped, *, deleted: bool) -> None:
        user = request.user.get_username()
        message = f"Force-removed finalizers {', '.join(map(str, gone))} as {user}"
        if skipped:
            message += "; skipped: " + "; ".join(skipped)
        message += "; it was Terminating and is deleted." if deleted else "."
        self.log_change(request, obj, message)
        logger.warning("%s %s: %s", self.model._meta.verbose_name, obj, message)

    def _report_finalizers_removed(self, request, released, removed, failed) -> None:
        if released:
            self.message_user(
                request, f"Removed finalizers from {', '.join(released)}.", messages.SUCCESS
            )
        if removed:
            self.message_user(
                request,
                f"Removed finalizers; these were Terminating and are "
                f"now deleted: {', '.join(removed)}.",
                messages.SUCCESS,
            )
        if not (released or removed or failed):
            self.message_user(
                request, "None of the selected objects had finalizers.", messages.INFO
            )
        for line in failed:
            self.message_user(request, f"Could not remove finalizers from {line}", messages.ERROR)
