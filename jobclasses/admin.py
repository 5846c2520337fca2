"""The operators' pages of the jobclasses kinds (seed 003): JobClass (Accepted/Ready with their
reasons, the default, the namespaces it admits now, its resource policy, its Jobs), the three
parameter kinds (their spec, the classes holding them) and Job (its frozen class, resources,
steps and log; Cancel).

"Remove finalizers (force)" is the seed's runbook recovery: superuser only, a confirmation
saying per object what is skipped (a Job's execution is not deleted; a class's or parameters
object's protection of the Jobs or classes still using it), and an audit ``LogEntry``. Every
write goes through the store as the logged-in user.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count
from django.utils.html import format_html

from portal import overview
from portal.models import Namespace
from portal.resource_admin import (
    NONE,
    LabelFilter,
    TerminatingFilter,
    age,
    badge,
    compact,
    link_to,
    selector_text,
    simple_table,
    timestamp,
)
from portal.resource_admin.render import phase_tone

from . import admin_render as render
from . import class_controller, parameters
from .adapters.local import work_root
from .job_admin import ExecutionAdmin, JobAdmin
from .kinds import job_reason
from .models import (
    CLASS_PROTECTION,
    GROUP,
    PARAMETERS_PROTECTION,
    TERMINAL_JOB_PHASES,
    Job,
    JobClass,
    KubernetesExecutionParameters,
    LocalExecutionParameters,
    OpenSandboxExecutionParameters,
)

JOBS_SHOWN = 50
NAMESPACES_SHOWN = 200

admin.site.register(Job, JobAdmin)


def annotate_active_jobs(classes) -> None:
    """``_active_jobs`` on each class of a page: the non-terminal Jobs by its UID, one query."""
    classes = list(classes)
    counts = dict(
        Job.objects.filter(job_class_uid__in=[str(c.uid) for c in classes])
        .exclude(phase__in=TERMINAL_JOB_PHASES)
        .values("job_class_uid")
        .annotate(count=Count("pk"))
        .order_by()
        .values_list("job_class_uid", "count")
    )
    for job_class in classes:
        job_class._active_jobs = counts.get(str(job_class.uid), 0)


def annotate_classes(model, objects) -> None:
    """``_classes`` on each parameters object of a page: the JobClasses naming it, one query
    (the ``class_controller.classes_holding`` rule, for a page)."""
    objects = list(objects)
    names: dict[str, list[str]] = {}
    for name, params in (
        JobClass.objects.filter(
            parameters_kind=model.__name__, parameters_name__in=[o.name for o in objects]
        )
        .order_by("name")
        .values_list("name", "parameters_name")
    ):
        names.setdefault(params, []).append(name)
    for obj in objects:
        obj._classes = names.get(obj.name, [])


def holders_text(what: str, holders: list[str]) -> str:
    shown = ", ".join(holders[:JOBS_SHOWN]) + (" …" if len(holders) > JOBS_SHOWN else "")
    return f"{len(holders)} {what}: {shown}"


def holding_html(obj, holding_of, *, nobody: str, waits: str, holders: str):
    """Why a Terminating object is still here: who its protective finalizer waits for."""
    if obj.deletion_timestamp is None:
        return render.muted("not being deleted")
    holding = holding_of()
    if not holding:
        return render.muted(f"{nobody}: the controller releases it on its next pass")
    return format_html("{} {}", badge("Terminating", "warn", waits), holders_text(holders, holding))


# ------------------------------------------------------------------------------ JobClass


@admin.register(JobClass)
class JobClassAdmin(ExecutionAdmin):
    force_finalize_warning = (
        f"Removing {CLASS_PROTECTION} lets the class go while Jobs still use it: their "
        "executions keep running and are still observed, cancelled and deleted by their frozen "
        "controllerName, but Jobs that are not Scheduled yet stay waiting (JobClassNotFound). "
        "A class re-created under the same name never captures them."
    )
    detail_fieldsets = [
        ("Acceptance and readiness", {"fields": ["accepted_display", "ready_display"]}),
        (
            "Spec",
            {
                "fields": [
                    "controller_display",
                    "parameters_display",
                    "default_display",
                    "resources_display",
                ]
            },
        ),
        ("Allowed namespaces", {"fields": ["selector_display", "admitted_display"]}),
        ("Jobs", {"fields": ["jobs_display", "holding_display"]}),
    ]

    def get_list_display(self, request):
        return [
            "name_cell",
            "controller_cell",
            "accepted_cell",
            "ready_cell",
            "default_cell",
            "parameters_cell",
            "active_jobs_cell",
            "labels_cell",
            "age_cell",
        ]

    def get_list_filter(self, request):
        return [
            "controller_name",
            "accepted",
            "ready",
            "is_default",
            TerminatingFilter,
            LabelFilter,
        ]

    def get_search_fields(self, request):
        return ("name", "controller_name", "parameters_name", "labels")

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_active_jobs(changelist.result_list)
        return changelist

    def force_finalize_consequences(self, obj):
        holding = class_controller.jobs_holding(obj)
        if not holding:
            return ["no non-terminal Job uses this class: nothing is left unprotected"]
        return [f"the protection is dropped for {holders_text('Jobs still using it', holding)}"]

    @admin.display(description="CONTROLLER", ordering="controller_name")
    def controller_cell(self, obj):
        return format_html("<code>{}</code>", obj.controller_name)

    @admin.display(description="ACCEPTED", ordering="accepted")
    def accepted_cell(self, obj):
        return render.condition_cell(obj.status, "Accepted")

    @admin.display(description="READY", ordering="ready")
    def ready_cell(self, obj):
        return render.condition_cell(obj.status, "Ready")

    @admin.display(description="DEFAULT", ordering="-is_default")
    def default_cell(self, obj):
        return badge("default", "info", "the global default JobClass") if obj.is_default else ""

    @admin.display(description="PARAMETERS", ordering="parameters_name")
    def parameters_cell(self, obj):
        return f"{obj.parameters_kind}/{obj.parameters_name}"

    @admin.display(description="ACTIVE JOBS")
    def active_jobs_cell(self, obj):
        if not hasattr(obj, "_active_jobs"):
            annotate_active_jobs([obj])
        return format_html(
            '<span title="Jobs using this class that have not finished">{}</span>',
            obj._active_jobs,
        )

    @admin.display(description="Accepted")
    def accepted_display(self, obj):
        return render.condition_detail(obj.status, "Accepted", obj.generation)

    @admin.display(description="Ready")
    def ready_display(self, obj):
        return render.condition_detail(obj.status, "Ready", obj.generation)

    @admin.display(description="controllerName")
    def controller_display(self, obj):
        return self.controller_cell(obj)

    @admin.display(description="parametersRef")
    def parameters_display(self, obj):
        ref = render.as_dict(render.as_dict(obj.spec).get("parametersRef"))
        found = parameters.lookup(ref)
        label = f"{compact(ref.get('kind'))} {compact(ref.get('name'))}"
        where = link_to(found, label, self.admin_site) if found else label
        state = (
            format_html("<span class='k-muted'>uid</span> <code>{}</code>", found.uid)
            if found
            else badge("not found", "bad", "no such parameters object (ParametersNotFound)")
        )
        return format_html(
            "{} {} <span class='k-muted'>(group {})</span>", where, state, compact(ref.get("group"))
        )

    @admin.display(description="global default")
    def default_display(self, obj):
        if obj.is_default:
            return format_html(
                "{} <span class='k-muted'>annotated {}: \"true\"</span>",
                badge("yes", "info"),
                "execution.ayatori.ddupan.top/is-default-job-class",
            )
        return "no"

    @admin.display(description="resources")
    def resources_display(self, obj):
        return render.policy_table(render.as_dict(obj.spec).get("resources"))

    @admin.display(description="selector")
    def selector_display(self, obj):
        selector = render.as_dict(obj.spec).get("allowedNamespaces")
        if selector is None:
            return render.muted("omitted: every namespace may use this class")
        text = selector_text(selector)
        return format_html(
            "<code>{}</code>", text if text != "{}" else "{} (matches every namespace)"
        )

    @admin.display(description="namespaces admitted now")
    def admitted_display(self, obj):
        namespaces = list(Namespace.objects.order_by("name")[: NAMESPACES_SHOWN + 1])
        admitted, error = render.admitted_namespaces(
            render.as_dict(obj.spec).get("allowedNamespaces"), namespaces[:NAMESPACES_SHOWN]
        )
        if error:
            return badge("invalid selector", "bad", error)
        links = [link_to(ns, ns.name, self.admin_site) for ns in admitted]
        more = (
            render.muted(f" (of the first {NAMESPACES_SHOWN} namespaces)")
            if len(namespaces) > NAMESPACES_SHOWN
            else ""
        )
        return format_html(
            '<span class="k-admitted">{}</span> {}',
            render.names_html(links),
            more or render.muted(f"({len(admitted)})"),
        )

    def _jobs(self, obj):
        return Job.objects.filter(job_class_uid=str(obj.uid)).order_by("-creation_timestamp")

    @admin.display(description="Jobs using it")
    def jobs_display(self, obj):
        jobs = list(self._jobs(obj)[: JOBS_SHOWN + 1])
        if not jobs:
            return NONE
        rows = [
            (
                link_to(job, f"{job.namespace}/{job.name}", self.admin_site),
                badge(job.phase, phase_tone(job.phase)),
                job_reason(job),
                format_html(
                    '<span title="{}">{}</span>',
                    timestamp(job.creation_timestamp),
                    age(job.creation_timestamp),
                ),
            )
            for job in jobs[:JOBS_SHOWN]
        ]
        table = simple_table(("job", "phase", "reason", "age"), rows)
        if len(jobs) > JOBS_SHOWN:
            return format_html(
                "{} {}",
                table,
                render.muted(f"the newest {JOBS_SHOWN} of {self._jobs(obj).count()}"),
            )
        return table

    @admin.display(description="deletion held by")
    def holding_display(self, obj):
        return holding_html(
            obj,
            lambda: class_controller.jobs_holding(obj),
            nobody="no non-terminal Job",
            waits=f"{CLASS_PROTECTION} waits for these Jobs to finish",
            holders="non-terminal Jobs",
        )


# ------------------------------------------------------------------------------ parameters


class ParametersAdmin(ExecutionAdmin):
    force_finalize_warning = (
        f"Removing {PARAMETERS_PROTECTION} lets the parameters go while JobClasses reference "
        "them: those classes turn Accepted=False (ParametersNotFound) and Jobs not Scheduled yet "
        "wait; running executions are still observed and cleaned up."
    )
    extra_list_display = ["classes_cell"]
    detail_fieldsets = [
        ("Spec", {"fields": ["spec_display"]}),
        ("JobClasses", {"fields": ["classes_display", "holding_display"]}),
    ]

    def render_spec(self, spec: dict):
        return render.key_values(spec)

    def force_finalize_consequences(self, obj):
        holding = class_controller.classes_holding(obj)
        if not holding:
            return ["no JobClass references it: nothing is left unprotected"]
        return [f"the protection is dropped for {holders_text('JobClasses using it', holding)}"]

    def _classes(self, obj):
        return JobClass.objects.filter(name__in=class_controller.classes_holding(obj)).order_by(
            "name"
        )

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_classes(self.model, changelist.result_list)
        return changelist

    @admin.display(description="CLASSES")
    def classes_cell(self, obj):
        if not hasattr(obj, "_classes"):
            annotate_classes(self.model, [obj])
        return ", ".join(obj._classes)

    @admin.display(description="spec")
    def spec_display(self, obj):
        return self.render_spec(render.as_dict(obj.spec))

    @admin.display(description="JobClasses referencing it")
    def classes_display(self, obj):
        rows = [
            (
                link_to(job_class, job_class.name, self.admin_site),
                render.condition_cell(job_class.status, "Accepted"),
                render.condition_cell(job_class.status, "Ready"),
            )
            for job_class in self._classes(obj)
        ]
        return simple_table(("class", "accepted", "ready"), rows) if rows else NONE

    @admin.display(description="deletion held by")
    def holding_display(self, obj):
        return holding_html(
            obj,
            lambda: class_controller.classes_holding(obj),
            nobody="no JobClass",
            waits=f"{PARAMETERS_PROTECTION} waits for these classes",
            holders="JobClasses still referencing it (delete them first)",
        )


@admin.register(KubernetesExecutionParameters)
class KubernetesExecutionParametersAdmin(ParametersAdmin):
    def render_spec(self, spec):
        return render.kubernetes_spec(spec)


@admin.register(OpenSandboxExecutionParameters)
class OpenSandboxExecutionParametersAdmin(ParametersAdmin):
    def render_spec(self, spec):
        return render.opensandbox_spec(spec)


@admin.register(LocalExecutionParameters)
class LocalExecutionParametersAdmin(ParametersAdmin):
    @admin.display(description="spec")
    def spec_display(self, obj):
        spec = render.as_dict(obj.spec)
        return render.local_spec(spec, str(work_root(obj.name, spec)))


def render_jobclasses(view: overview.OverviewView):
    """JobClasses (cluster-scoped) by readiness (the ``ready`` column), linked to their list."""
    from portal.auth.authorizer import review  # noqa: PLC0415

    if not review(view.request.user, "list", GROUP, "jobclasses").allowed:
        return format_html('<span class="k-muted">{}</span>', "you may not list JobClasses")
    counts = dict(
        JobClass.objects.values_list("ready").annotate(n=Count("pk")).values_list("ready", "n")
    )
    ready, total = counts.get("True", 0), sum(counts.values())
    return format_html(
        '<span class="k-stat"><span class="k-big">{}</span><span class="k-muted">{}</span></span>',
        view.link(f"{ready}/{total}", "jobclasses.jobclass"),
        badge("Ready", "ok" if ready == total else "warn", "JobClasses ready / all"),
    )


# the overview (portal.overview): Jobs are workloads, JobClasses capacity, parameters definitions
overview.place("workloads", "jobclasses.job", order=30)
overview.place("capacity", "jobclasses.jobclass", order=40)
for _model in (
    "kubernetesexecutionparameters",
    "opensandboxexecutionparameters",
    "localexecutionparameters",
):
    overview.place("definitions", f"jobclasses.{_model}", order=40)
overview.register_tile(
    overview.Tile(
        "jobs",
        "Jobs",
        "workloads",
        overview.phase_tile(
            Job,
            "jobclasses.job",
            GROUP,
            "jobs",
            ("Pending", "Scheduled", "Running", "Unknown"),
            ("Succeeded", "Failed"),
        ),
        order=60,
    )
)
overview.register_tile(
    overview.Tile("jobclasses", "JobClasses", "capacity", render_jobclasses, order=40)
)
