"""Job's admin page (registered by ``jobclasses.admin``): phase, class, steps and reason at a
glance; its frozen resolvedJobClass (and whether that object still exists), effective
resources, executionRef, step results and the log tail in detail; Cancel.

``ExecutionAdmin`` is the base of every jobclasses kind's admin: their finalizers guard what
outlives the object (an execution, the Jobs or classes still using it), so removing them by
force is for superusers only.
"""

from __future__ import annotations

import uuid

from django.contrib import admin
from django.utils.html import format_html

from portal.resource_admin import (
    NONE,
    ResourceAdmin,
    TerminatingFilter,
    badge,
    compact,
    link_to,
    simple_table,
)

from . import admin_render as render
from . import job_controller, parameters
from .models import EXECUTION_CLEANUP, GROUP, VERSION, Job, JobClass

LOG_TAIL_BYTES = 64 * 1024


class ExecutionAdmin(ResourceAdmin):
    force_finalize_superuser_only = True
    force_finalize_label = "Force-remove finalizers"  # the runbook's name (docs/jobclasses.md)


def _by_uid(model, uid: str):
    try:
        return model.objects.filter(uid=uuid.UUID(str(uid))).first()
    except ValueError:  # not a UUID: nothing has it
        return None


def annotate_classes(jobs) -> None:
    """``_class`` on each Job of a page: the JobClass object its resolvedJobClass names by UID
    (None when gone or replaced), one query."""
    jobs = list(jobs)
    uids = set()
    for job in jobs:
        try:
            uids.add(uuid.UUID(job.job_class_uid))
        except ValueError:
            continue
    found = {str(c.uid): c for c in JobClass.objects.filter(uid__in=uids)} if uids else {}
    for job in jobs:
        job._class = found.get(job.job_class_uid)


def log_api_url(job: Job) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{job.namespace}/jobs/{job.name}/log"


class JobAdmin(ExecutionAdmin):
    actions = ["cancel_jobs", "delete_objects", "remove_finalizers"]
    force_finalize_warning = (
        f"Removing {EXECUTION_CLEANUP} skips deleting the Job's execution: its backend "
        "resources (a local work directory and processes, a batch Job, a sandbox) are left as "
        "they are and the portal never deletes them. Terminating Jobs are removed at once."
    )
    replaced_columns = {"column_class": "class_cell"}
    detail_fieldsets = [
        ("Class", {"fields": ["requested_class_display", "resolved_class_display"]}),
        (
            "Execution",
            {
                "fields": [
                    "message_display",
                    "effective_resources_display",
                    "execution_ref_display",
                    "start_display",
                    "completion_display",
                    "cancel_display",
                ]
            },
        ),
        ("Steps", {"fields": ["steps_display"]}),
        ("Log", {"fields": ["log_display"]}),
    ]

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        at = filters.index(TerminatingFilter) if TerminatingFilter in filters else len(filters)
        return [*filters[:at], "job_class", *filters[at:]]

    def get_search_fields(self, request):
        return (*super().get_search_fields(request), "job_class", "requested_class")

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_classes(changelist.result_list)
        return changelist

    def force_finalize_consequences(self, obj):
        status = render.as_dict(obj.status)
        ref = status.get("executionRef")
        controller = compact(render.as_dict(status.get("resolvedJobClass")).get("controllerName"))
        if not ref:
            return ["no execution was created (no executionRef): nothing is left behind"]
        lines = [f"the execution is not deleted: {controller} keeps executionRef {compact(ref)}"]
        if not obj.is_finished:
            lines.append(f"the Job is {obj.phase}: its execution may still be running")
        return lines

    # ---------------------------------------------------------------------------- list

    @admin.display(description="CLASS", ordering="job_class")
    def class_cell(self, obj):
        if not obj.job_class:
            wanted = obj.requested_class or "(default)"
            return render.muted(f"{wanted}, not resolved")
        if not hasattr(obj, "_class"):
            annotate_classes([obj])
        if obj._class is None:
            return format_html(
                "{} {}",
                obj.job_class,
                badge(
                    "gone",
                    "warn",
                    "no JobClass has the uid this Job resolved (deleted, or re-created under "
                    "this name): it never moves to another class object",
                ),
            )
        return link_to(obj._class, obj.job_class, self.admin_site)

    # ---------------------------------------------------------------------------- detail

    @admin.display(description="spec.jobClassName")
    def requested_class_display(self, obj):
        return obj.requested_class or render.muted("not set: the namespace's or global default")

    def _object_state(self, model, uid: str, name: str, label: str):
        """A link to the object with this UID, or why there is none (gone / replaced)."""
        found = _by_uid(model, uid) if uid else None
        if found is not None:
            return link_to(found, label, self.admin_site)
        same_name = model.objects.filter(name=name).first()
        if same_name is not None and uid:
            return format_html(
                "{} {}",
                label,
                badge(
                    "replaced",
                    "warn",
                    f"a new object (uid {same_name.uid}) has this name: the Job never uses it",
                ),
            )
        if not uid:
            return format_html("{} {}", label, render.muted("(uid not recorded yet)"))
        return format_html("{} {}", label, badge("gone", "warn", "no object has this uid"))

    @admin.display(description="resolvedJobClass")
    def resolved_class_display(self, obj):
        resolved = render.as_dict(render.as_dict(obj.status).get("resolvedJobClass"))
        if not resolved:
            return render.muted("not resolved yet")
        ref = render.as_dict(resolved.get("parametersRef"))
        model = parameters.PARAMETER_MODELS.get(compact(ref.get("kind")))
        params_label = f"{compact(ref.get('kind'))} {compact(ref.get('name'))}"
        params_state = (
            self._object_state(
                model, compact(ref.get("uid")), compact(ref.get("name")), params_label
            )
            if model is not None and ref.get("group") == GROUP
            else params_label
        )
        code = "<code>{}</code>"
        rows = [
            (
                "name",
                self._object_state(
                    JobClass,
                    compact(resolved.get("uid")),
                    compact(resolved.get("name")),
                    compact(resolved.get("name")),
                ),
            ),
            ("uid", format_html(code, compact(resolved.get("uid")))),
            ("controllerName", format_html(code, compact(resolved.get("controllerName")))),
            ("parametersRef", params_state),
            ("parametersRef.group", compact(ref.get("group"))),
            ("parametersRef.uid", format_html(code, compact(ref.get("uid")) or "—")),
        ]
        return simple_table(("field", "value"), rows)

    @admin.display(description="message")
    def message_display(self, obj):
        message = compact(render.as_dict(obj.status).get("message"))
        return format_html('<span class="k-pre">{}</span>', message) if message else NONE

    @admin.display(description="effectiveResources")
    def effective_resources_display(self, obj):
        return render.requirements_table(render.as_dict(obj.status).get("effectiveResources"))

    @admin.display(description="executionRef")
    def execution_ref_display(self, obj):
        ref = render.as_dict(obj.status).get("executionRef")
        return render.key_values(ref) if ref else render.muted("none: no execution created yet")

    @admin.display(description="startTime")
    def start_display(self, obj):
        return render.time_cell(render.as_dict(obj.status).get("startTime"))

    @admin.display(description="completionTime")
    def completion_display(self, obj):
        status = render.as_dict(obj.status)
        took = render.duration_between(status.get("startTime"), status.get("completionTime"))
        cell = render.time_cell(status.get("completionTime"))
        return format_html("{} {}", cell, render.muted(f"(took {took})")) if took else cell

    @admin.display(description="cancel requested")
    def cancel_display(self, obj):
        return badge("yes", "warn") if obj.cancel_requested else "no"

    @admin.display(description="steps")
    def steps_display(self, obj):
        return render.steps_table(render.as_dict(obj.status).get("steps"))

    @admin.display(description="log (tail)")
    def log_display(self, obj):
        text = job_controller.log_of(obj, limit_bytes=LOG_TAIL_BYTES)
        return render.log_block(text, LOG_TAIL_BYTES, log_api_url(obj))

    # ---------------------------------------------------------------------------- actions

    @admin.action(permissions=["change"], description="Cancel")
    def cancel_jobs(self, request, queryset):
        """Ask each unfinished Job to stop (``spec.cancelRequested``, through the store)."""
        self.request_cancellation(
            request, queryset, finished=lambda job: job.is_finished, plural="Jobs"
        )
