"""The console's WorkflowRun and Workflow actions: Rerun, Rerun failed jobs and Cancel on a run
(its page and the list), and Submit on a Workflow (a form made from its ``spec.inputs``).

Every write goes through the store as the logged-in user, so the API's authorization decides
(a rerun needs ``create`` on workflowruns and ``get`` on the run it reruns, ``workflows.reruns``;
a cancel ``patch``): a forged POST is refused as the API would refuse it. The buttons are shown
only to a user RBAC allows (``may``), and the POSTs carry Django's CSRF token.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from portal.auth.authorizer import review
from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.managed_fields import CONSOLE_MANAGER
from portal.resource_admin import NONE

from . import reruns
from .models import JobPhase, WorkflowRun
from .names import API_VERSION
from .starting import GENERATED_PREFIX_MAX, run_manifest, workflow_run_kind

RERUNS_SHOWN = 20


def may(user: Any, verb: str, namespace: str, name: str = "") -> bool:
    """Would the API let ``user`` ``verb`` workflowruns (named ``name``) in ``namespace``?"""
    kind = workflow_run_kind()
    return review(user, verb, kind.group, kind.plural, "", namespace, name).allowed


def may_rerun(user: Any, run: WorkflowRun) -> bool:
    return (
        run.is_finished
        and may(user, "create", run.namespace)
        and may(user, "get", run.namespace, run.name)
    )


def has_failed_jobs(run: WorkflowRun) -> bool:
    """A finished run with a job that did not succeed (what "Rerun failed jobs" reruns)."""
    jobs = (run.status or {}).get("jobs") or {}
    return run.is_finished and any(
        isinstance(j, dict) and j.get("phase") != JobPhase.SUCCEEDED for j in jobs.values()
    )


def rerun_manifest(run: WorkflowRun, failed_only: bool) -> dict[str, Any]:
    prefix = f"{run.name[: GENERATED_PREFIX_MAX - 7].rstrip('-.')}-rerun-"
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkflowRun",
        "metadata": {"generateName": prefix},
        "spec": {"rerunOf": {"name": run.name, "failedJobsOnly": failed_only}},
    }


def rerun(user: Any, run: WorkflowRun, failed_only: bool) -> WorkflowRun:
    """Create the rerun as ``user`` (a StatusError when the API would refuse it)."""
    context = store.WriteContext(user=user, field_manager=CONSOLE_MANAGER)
    made: WorkflowRun = store.create(
        workflow_run_kind(),
        rerun_manifest(run, failed_only),
        namespace=run.namespace,
        context=context,
    )
    return made


class WorkflowRunActionsMixin:
    """Mixed into ``WorkflowRunAdmin`` before ``ResourceAdmin``: the page's buttons and the
    list's actions."""

    def get_urls(self):
        wrap = self.admin_site.admin_view  # type: ignore[attr-defined]
        return [
            path(
                "<path:object_id>/rerun/", wrap(self.rerun_view), name="workflows_workflowrun_rerun"
            ),
            path(
                "<path:object_id>/cancel/",
                wrap(self.cancel_view),
                name="workflows_workflowrun_cancel",
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def run_buttons(self, request, obj: WorkflowRun) -> dict[str, Any]:
        """What the page's tools show, and where they post."""
        site = self.admin_site.name  # type: ignore[attr-defined]
        can_rerun = may_rerun(request.user, obj)
        return {
            "rerun_url": reverse(f"{site}:workflows_workflowrun_rerun", args=[obj.pk]),
            "cancel_url": reverse(f"{site}:workflows_workflowrun_cancel", args=[obj.pk]),
            "can_rerun": can_rerun,
            "can_rerun_failed": can_rerun and has_failed_jobs(obj),
            "can_cancel": not obj.is_finished
            and not obj.cancel_requested
            and may(request.user, "patch", obj.namespace, obj.name),
        }

    def _posted(self, request, object_id) -> WorkflowRun:
        run = self.get_object(request, unquote(object_id))  # type: ignore[attr-defined]
        if run is None:
            raise PermissionDenied
        return run

    def _change_url(self, run: WorkflowRun) -> str:
        site = self.admin_site.name  # type: ignore[attr-defined]
        return reverse(f"{site}:workflows_workflowrun_change", args=[run.pk])

    def rerun_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._posted(request, object_id)
        failed_only = request.POST.get("failed_only") == "1"
        try:
            new = rerun(request.user, run, failed_only)
        except StatusError as exc:
            if exc.code == 403:
                raise PermissionDenied(exc.message) from None
            self.message_user(request, f"Could not rerun {run.name}: {exc.message}", messages.ERROR)  # type: ignore[attr-defined]
            return HttpResponseRedirect(self._change_url(run))
        what = "its failed jobs" if failed_only else "all its jobs"
        self.message_user(  # type: ignore[attr-defined]
            request, f"Created {new.name}, a rerun of {run.name} ({what}).", messages.SUCCESS
        )
        return HttpResponseRedirect(self._change_url(new))

    def cancel_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._posted(request, object_id)
        if not may(request.user, "patch", run.namespace, run.name):
            raise PermissionDenied
        self.request_cancellation(  # type: ignore[attr-defined]
            request,
            WorkflowRun.objects.filter(pk=run.pk),
            finished=lambda r: r.is_finished,
            plural="WorkflowRuns",
        )
        return HttpResponseRedirect(self._change_url(run))

    def _rerun_selected(self, request, queryset, failed_only: bool) -> None:
        made, failed = [], []
        for run in queryset.order_by("namespace", "name"):
            label = f"{run.namespace}/{run.name}"
            try:
                new = rerun(request.user, run, failed_only)
            except StatusError as exc:
                failed.append(f"{label}: {exc.message}")
            else:
                made.append(f"{label} as {new.name}")
        if made:
            self.message_user(request, f"Rerun {', '.join(made)}.", messages.SUCCESS)  # type: ignore[attr-defined]
        for line in failed:
            self.message_user(request, f"Could not rerun {line}", messages.ERROR)  # type: ignore[attr-defined]

    @admin.action(description="Rerun")
    def rerun_workflow_runs(self, request, queryset):
        """A new WorkflowRun of each selected finished run's jobs and inputs."""
        self._rerun_selected(request, queryset, failed_only=False)

    @admin.action(description="Rerun failed jobs")
    def rerun_failed_jobs(self, request, queryset):
        """A new WorkflowRun of each selected run's jobs that did not succeed."""
        self._rerun_selected(request, queryset, failed_only=True)

    @admin.display(description="reruns")
    def rerun_display(self, obj: WorkflowRun):
        site = self.admin_site.name  # type: ignore[attr-defined]

        def link(run: WorkflowRun) -> Any:
            href = reverse(f"{site}:workflows_workflowrun_change", args=[run.pk])
            return format_html('<a href="{}">{}</a> ({})', href, run.name, run.phase)

        parts = []
        ref = (obj.spec or {}).get("rerunOf")
        if isinstance(ref, dict) and ref.get("name"):
            source = reruns.source_of(obj)
            what = " (failed jobs only)" if ref.get("failedJobsOnly") else ""
            shown = link(source) if source else format_html("{} (deleted)", ref["name"])
            parts.append(format_html("Rerun of {}{}", shown, what))
        later = list(reruns.reruns_of(obj)[:RERUNS_SHOWN])
        if later:
            links = format_html_join(", ", "{}", ((link(r),) for r in later))
            parts.append(format_html("Rerun as {}", links))
        if not parts:
            return NONE
        return format_html_join(" · ", '<span class="k-rerun">{}</span>', ((p,) for p in parts))


# ------------------------------------------------------------------------------ Submit


def inputs_form(declared: dict[str, Any], data: Any = None) -> forms.Form:
    """A form of the Workflow's inputs: each a text field, its default filled in, a required
    one marked and enforced."""
    fields: dict[str, forms.Field] = {}
    for name, spec in declared.items():
        spec = spec if isinstance(spec, dict) else {}
        required = bool(spec.get("required"))
        fields[name] = forms.CharField(
            label=name,
            required=required,
            initial=spec.get("default", ""),
            strip=False,
            help_text="required" if required else "",
            error_messages={"required": f"The Workflow requires the input {name}."},
            widget=forms.TextInput(attrs={"size": 60}),
        )
    form_class = type("WorkflowInputsForm", (forms.Form,), fields)
    return form_class(data=data)


class WorkflowSubmitMixin:
    """Mixed into ``WorkflowAdmin``: ``<id>/submit/``, the form that starts the Workflow."""

    def get_urls(self):
        wrap = self.admin_site.admin_view  # type: ignore[attr-defined]
        return [
            path(
                "<path:object_id>/submit/",
                wrap(self.submit_view),
                name="workflows_workflow_submit",
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def submit_url(self, obj) -> str:
        site = self.admin_site.name  # type: ignore[attr-defined]
        return reverse(f"{site}:workflows_workflow_submit", args=[obj.pk])

    def submit_view(self, request, object_id):
        workflow = self.get_object(request, unquote(object_id))  # type: ignore[attr-defined]
        if workflow is None:
            raise PermissionDenied
        if not may(request.user, "create", workflow.namespace):
            raise PermissionDenied
        declared = (workflow.spec or {}).get("inputs") or {}
        form = inputs_form(declared, request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            context = store.WriteContext(user=request.user, field_manager=CONSOLE_MANAGER)
            try:
                run = store.create(
                    workflow_run_kind(),
                    run_manifest(workflow.name, dict(form.cleaned_data)),
                    namespace=workflow.namespace,
                    context=context,
                )
            except StatusError as exc:
                if exc.code == 403:
                    raise PermissionDenied(exc.message) from None
                for cause in exc.causes:
                    key = cause.field.removeprefix("spec.inputs.")
                    form.add_error(key if key in form.fields else None, cause.message)
                if not exc.causes:
                    form.add_error(None, exc.message)
            else:
                site = self.admin_site.name  # type: ignore[attr-defined]
                self.message_user(  # type: ignore[attr-defined]
                    request, f"Started {run.name} from Workflow {workflow.name}.", messages.SUCCESS
                )
                return HttpResponseRedirect(
                    reverse(f"{site}:workflows_workflowrun_change", args=[run.pk])
                )
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "title": f"Submit Workflow {workflow.name}",
            "workflow": workflow,
            "form": form,
            "opts": self.model._meta,  # type: ignore[attr-defined]
            "original": workflow,
            "change_url": reverse(
                f"{self.admin_site.name}:workflows_workflow_change",  # type: ignore[attr-defined]
                args=[workflow.pk],
            ),
        }
        return TemplateResponse(request, "admin/workflows/workflow/submit.html", context)
