"""The workflows admin: WorkflowRun (phase, jobs and duration at a glance; the job graph, each
job's steps with their child Runs and logs, artifacts, inputs and outputs in detail; Cancel),
Workflow (its jobs as a graph, the runs started from it) and Action (its steps).

The pages read the models and the API.md shape of spec/status, tolerating any JSON; every write
goes through the store as the logged-in user, so a denied one is a message. The graph is an SVG
drawn server-side by ``workflows.graph``. Lookups are batched per page (the child Runs of a
WorkflowRun in one query, the Workflows of a list page in one), never per job or step.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Count, Q
from django.db.models.fields.json import KeyTransform
from django.template.defaultfilters import filesizeformat
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from portal import overview
from portal.auth.namespaces import visible_namespaces
from portal.machinery.conditions import time_or_none
from portal.models import ControllerRevision
from portal.resource_admin import (
    NONE,
    ResourceAdmin,
    TerminatingFilter,
    age,
    badge,
    code_list,
    compact,
    elapsed,
    link_to,
    simple_table,
    timestamp,
)
from portal.resource_admin.render import phase_tone
from scheduling.admin.run_artifacts import download_url
from scheduling.admin.run_data import location_text
from scheduling.models import Run

from . import graph, job_workspaces, step_graph
from .console import WorkflowRunActionsMixin, WorkflowSubmitMixin, may
from .models import Action, JobPhase, Workflow, WorkflowRun
from .starting import run_manifest
from .status import step_shown

WORKFLOWRUN_UID = "kruntimes.io/workflowrun-uid"
WORKFLOW_JOB = "kruntimes.io/workflow-job"
WORKFLOW_STEP = "kruntimes.io/workflow-step"
RUNS_SHOWN = 50
CHILD_RUNS_LOADED = 2000
RUN_UID_IN_LOCATION = re.compile(r"(?:^|/)runs/([0-9a-fA-F-]{32,36})(?:/|$)")


# ------------------------------------------------------------------------------ shape helpers


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def phase_badge(phase: Any, default: str = "") -> SafeString:
    text = compact(phase) or default
    return badge(text, phase_tone(text)) if text else NONE


def spec_jobs(spec: Any) -> dict[str, dict]:
    return {str(k): as_dict(v) for k, v in as_dict(as_dict(spec).get("jobs")).items()}


def status_jobs(status: Any) -> dict[str, dict]:
    return {str(k): as_dict(v) for k, v in as_dict(as_dict(status).get("jobs")).items()}


def job_ids(run: WorkflowRun) -> list[str]:
    """The spec's jobs in spec order, then any the status knows and the spec does not."""
    return list(dict.fromkeys([*spec_jobs(run.spec), *status_jobs(run.status)]))


def job_phases(run: WorkflowRun) -> dict[str, str]:
    jobs = status_jobs(run.status)
    return {
        job: compact(jobs.get(job, {}).get("phase")) or JobPhase.PENDING for job in job_ids(run)
    }


def jobs_summary(run: WorkflowRun) -> SafeString:
    """``2/3 jobs succeeded``, coloured by the worst job; the other phases in the tooltip."""
    phases = job_phases(run)
    if not phases:
        return NONE
    counts = Counter(phases.values())
    done = counts.get(JobPhase.SUCCEEDED, 0)
    title = ", ".join(f"{n} {phase}" for phase, n in sorted(counts.items()))
    if counts.get(JobPhase.FAILED):
        tone = "bad"
    elif done == len(phases):
        tone = "ok"
    elif counts.get(JobPhase.RUNNING) or counts.get(JobPhase.WAITING):
        tone = "info"
    else:
        tone = "pending"
    return badge(f"{done}/{len(phases)} jobs succeeded", tone, title)


def run_window(run: WorkflowRun):
    """(start, end) of a WorkflowRun: status.startTime (else its creation) to
    status.completionTime (else, once finished, its last condition transition)."""
    status = as_dict(run.status)
    start = time_or_none(status.get("startTime")) or run.creation_timestamp
    end = time_or_none(status.get("completionTime"))
    if end is None and run.is_finished:
        times = [
            time_or_none(as_dict(c).get("lastTransitionTime"))
            for c in as_list(status.get("conditions"))
        ]
        end = max((t for t in times if t is not None), default=None)
    return start, end


def key_value_table(values: Any, header: str = "value") -> SafeString:
    values = as_dict(values)
    if not values:
        return NONE
    rows = [
        (
            format_html("<code>{}</code>", key),
            format_html('<span class="k-pre">{}</span>', compact(value)),
        )
        for key, value in sorted(values.items())
    ]
    return simple_table(("name", header), rows)


def inline_pairs(values: Any) -> SafeString:
    """Outputs in a table cell: ``key=value`` per line."""
    values = as_dict(values)
    if not values:
        return mark_safe('<span class="k-muted">—</span>')
    return format_html_join(
        mark_safe("<br>"),
        '<code>{}</code>=<span class="k-pre">{}</span>',
        ((key, compact(value)) for key, value in sorted(values.items())),
    )


def declared_inputs_table(inputs: Any) -> SafeString:
    """A Workflow's or Action's input declarations (``{name: {type, required, default,
    description}}`` or a list of ``{name, ...}``)."""
    if isinstance(inputs, list):
        inputs = {compact(as_dict(i).get("name")): as_dict(i) for i in inputs}
    inputs = as_dict(inputs)
    if not inputs:
        return NONE
    rows = []
    for name, decl in sorted(inputs.items()):
        decl = decl if isinstance(decl, dict) else {"default": decl}
        rows.append(
            (
                format_html("<code>{}</code>", name),
                compact(decl.get("type")),
                "yes" if decl.get("required") else "",
                format_html('<span class="k-pre">{}</span>', compact(decl.get("default"))),
                compact(decl.get("description")),
            )
        )
    return simple_table(("name", "type", "required", "default", "description"), rows)


def admin_url(site: admin.AdminSite, view: str, *args: Any) -> str | None:
    try:
        return reverse(f"{site.name}:{view}", args=args)
    except NoReverseMatch:
        return None


def graph_html(svg: str) -> SafeString:
    if not svg:
        return NONE
    # graph.render_svg escapes every name and value it writes
    return format_html('<div class="k-graph-box">{}</div>', mark_safe(svg))  # noqa: S308


# ------------------------------------------------------------------------------ child Runs


def artifact_run_uid(ref: Any) -> str | None:
    """The producing Run's UID, from the ref's location (``.../runs/<uid>/<name>``)."""
    match = RUN_UID_IN_LOCATION.search(location_text(as_dict(ref)))
    if not match:
        return None
    try:
        return str(uuid.UUID(match.group(1)))
    except ValueError:
        return None


class ChildRuns:
    """The Runs a WorkflowRun's page links to, loaded in one query: by name (each step's
    ``runName``), by the workflow labels (a step the status has not named a Run for yet) and
    by UID (the Runs that produced the jobs' artifacts)."""

    def __init__(self, run: WorkflowRun):
        names, uids = set(), set()
        for job in status_jobs(run.status).values():
            for step in steps_of(job):
                names.add(compact(step.get("runName")))
                names.update(compact(a.get("runName")) for a in action_steps_of(step))
            for ref in as_dict(job.get("artifacts")).values():
                uid = artifact_run_uid(ref)
                if uid:
                    uids.add(uid)
        names.discard("")
        query = Q(**{"_wfr": str(run.uid)})
        if names:
            query |= Q(name__in=names)
        if uids:
            query |= Q(uid__in=uids)
        rows = (
            Run.objects.filter(namespace=run.namespace)
            .alias(_wfr=KeyTransform(WORKFLOWRUN_UID, "labels"))
            .filter(query)
            .order_by("creation_timestamp", "pk")[:CHILD_RUNS_LOADED]
        )
        # the children the controller recorded making, when it has (the labels alone may lie)
        recorded = {as_dict(c).get("uid") for c in as_list(as_dict(run.status).get("children"))}
        trusted = (lambda uid: uid in recorded) if "children" in as_dict(run.status) else bool
        self.by_name: dict[str, Run] = {}
        self.by_uid: dict[str, Run] = {}
        self.by_step: dict[tuple[str, str], Run] = {}
        for child in rows:
            self.by_name[child.name] = child
            self.by_uid[str(child.uid)] = child
            labels = as_dict(child.labels)
            if labels.get(WORKFLOWRUN_UID) == str(run.uid) and trusted(str(child.uid)):
                key = (compact(labels.get(WORKFLOW_JOB)), compact(labels.get(WORKFLOW_STEP)))
                self.by_step[key] = child  # the newest wins

    def for_step(self, job: str, step: dict, index: int) -> Run | None:
        name = compact(step.get("runName"))
        if name:
            return self.by_name.get(name)
        return self.by_step.get((job, compact(step.get("name")))) or self.by_step.get(
            (job, str(index))
        )


def steps_of(job: dict) -> list[dict]:
    return [as_dict(step) for step in as_list(job.get("steps"))]


def action_steps_of(step: dict) -> list[dict]:
    return [as_dict(s) for s in as_list(step.get("actionSteps"))]


def run_cells(site: admin.AdminSite, child: Run | None, name: str) -> tuple[SafeString, SafeString]:
    """(the Run linked, with its phase; its log viewer and the log download)."""
    if child is None:
        if not name:
            return mark_safe('<span class="k-muted">not created yet</span>'), NONE
        return format_html('{} <span class="k-muted">(not found)</span>', name), NONE
    url = admin_url(site, "scheduling_run_change", child.pk)
    if url is None:
        return format_html("{}", child.name), NONE
    run_cell = format_html(
        '<a href="{}" class="k-run-link">{}</a> {}', url, child.name, phase_badge(child.phase)
    )
    download = admin_url(site, "scheduling_run_log_download", child.pk)
    log_cell = format_html(
        '<a href="{}#run-log" class="k-log-link">log</a>{}',
        url,
        format_html(
            ' · <a href="{}?{}" class="k-log-download">download</a>',
            download,
            urlencode({"attempt": child.attempt}),
        )
        if download
        else "",
    )
    return run_cell, log_cell


def steps_table(site: admin.AdminSite, job_id: str, job: dict, children: ChildRuns) -> SafeString:
    rows = []
    for index, step in enumerate(steps_of(job)):
        name = compact(step.get("name")) or f"#{index + 1}"
        child = children.for_step(job_id, step, index)
        phase, why = step_shown(job, step)
        rows.append(
            (
                format_html("<strong>{}</strong>", name),
                format_html('{} <span class="k-muted">{}</span>', phase_badge(phase), why)
                if why
                else phase_badge(phase),
                *run_cells(site, child, compact(step.get("runName"))),
                inline_pairs(step.get("outputs")),
            )
        )
        for sub_index, sub in enumerate(action_steps_of(step)):
            sub_name = compact(sub.get("name")) or f"#{sub_index + 1}"
            sub_child = children.by_name.get(compact(sub.get("runName")))
            sub_phase, _ = step_shown(job, sub)
            rows.append(
                (
                    format_html('<span class="k-muted">↳</span> {}', sub_name),
                    phase_badge(sub_phase),
                    *run_cells(site, sub_child, compact(sub.get("runName"))),
                    inline_pairs(sub.get("outputs")),
                )
            )
    if not rows:
        return mark_safe('<span class="k-muted">no steps have started</span>')
    return simple_table(("step", "phase", "Run", "log", "outputs"), rows, "k-table k-steps")


def artifacts_table(site: admin.AdminSite, artifacts: Any, children: ChildRuns) -> SafeString:
    """A job's artifacts, each downloaded from the store of the Run that produced it."""
    artifacts = as_dict(artifacts)
    if not artifacts:
        return NONE
    rows = []
    for name, ref in sorted(artifacts.items()):
        ref = as_dict(ref)
        uid = artifact_run_uid(ref)
        producer = children.by_uid.get(uid) if uid else None
        url = download_url(producer, name) if producer else None
        size = ref.get("sizeBytes")
        rows.append(
            (
                format_html("<strong>{}</strong>", name),
                compact(ref.get("type")),
                filesizeformat(size) if isinstance(size, int) else "—",
                format_html("<code>{}</code>", location_text(ref)),
                format_html(
                    '<a href="{}" class="k-artifact-link" title="from the store of Run {}">'
                    "download</a>",
                    url,
                    producer.name,
                )
                if url and producer
                else mark_safe('<span class="k-muted">producing Run not found</span>'),
            )
        )
    return simple_table(("artifact", "type", "size", "location", "download"), rows)


# ------------------------------------------------------------------------------ WorkflowRun


def annotate_workflow_pks(objects: Iterable[Any], attribute: str) -> None:
    """Set ``_workflow_pk`` on each row from (namespace, row.<attribute>): one query a page."""
    objects = list(objects)
    pairs = {(o.namespace, getattr(o, attribute)) for o in objects if getattr(o, attribute)}
    found: dict[tuple[str, str], int] = {}
    if pairs:
        rows = Workflow.objects.filter(
            namespace__in={ns for ns, _ in pairs}, name__in={name for _, name in pairs}
        ).values_list("namespace", "name", "pk")
        found = {(ns, name): pk for ns, name, pk in rows}
    for obj in objects:
        obj._workflow_pk = found.get((obj.namespace, getattr(obj, attribute)))


FIRST_SECTIONS = ("Status", "Job graph", "Jobs", "Data")


@admin.register(WorkflowRun)
class WorkflowRunAdmin(WorkflowRunActionsMixin, ResourceAdmin):
    change_form_template = "admin/workflows/workflowrun/change_form.html"
    actions = [
        "cancel_workflow_runs",
        "rerun_workflow_runs",
        "rerun_failed_jobs",
        "delete_objects",
        "remove_finalizers",
    ]
    detail_fieldsets = [
        ("Job graph", {"fields": ["step_graph_display", "graph_display"]}),
        ("Jobs", {"fields": ["jobs_display"]}),
        (
            "Data",
            {
                "fields": [
                    "workflow_display",
                    "rerun_display",
                    "message_display",
                    "inputs_display",
                    "outputs_display",
                    "snapshot_display",
                    "workspaces_display",
                    "cancel_display",
                ]
            },
        ),
    ]

    def get_list_display(self, request):
        return [
            "name_cell",
            "namespace_cell",
            "phase_cell",
            "workflow_cell",
            "jobs_cell",
            "started_cell",
            "duration_cell",
            "message_cell",
            "conditions_cell",
            "labels_cell",
            "age_cell",
        ]

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        at = filters.index(TerminatingFilter) if TerminatingFilter in filters else len(filters)
        return [*filters[:at], "workflow", *filters[at:]]

    def get_search_fields(self, request):
        return (*super().get_search_fields(request), "uid", "workflow")

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_workflow_pks(changelist.result_list, "workflow")  # evaluates (caches) the page
        return changelist

    def get_fieldsets(self, request, obj=None):
        """What the run does first (status, the step graph, the jobs, its data), then the
        rest (metadata, labels, YAML) as the shared page orders it."""
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        first = [f for title in FIRST_SECTIONS for f in fieldsets if f[0] == title]
        return first + [f for f in fieldsets if f[0] not in FIRST_SECTIONS]

    def has_change_permission(self, request, obj=None):
        """A finished run's page has nothing to save (its spec is fixed, cancelling is
        over): it is shown read-only, without Save buttons."""
        if obj is not None and obj.is_finished:
            return False
        return super().has_change_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        namespaces = visible_namespaces(request.user, "kruntimes.io", "workflowruns")
        if not request.user.is_superuser and not any(
            may(request.user, "create", ns) for ns in namespaces
        ):
            actions.pop("rerun_workflow_runs", None)
            actions.pop("rerun_failed_jobs", None)
        return actions

    def example_manifest(self, namespace: str) -> dict | None:
        """The Add form starts a Workflow of the namespace (the newest), its inputs' defaults
        filled in; the Workflow page's Submit form is the easier way."""
        workflow = Workflow.objects.filter(namespace=namespace).order_by("-creation_timestamp")
        found = workflow.first()
        if found is None:
            return None
        inputs = {
            key: str(as_dict(spec).get("default", ""))
            for key, spec in as_dict(as_dict(found.spec).get("inputs")).items()
        }
        manifest = run_manifest(found.name, inputs)
        manifest["metadata"]["namespace"] = namespace
        return manifest

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and not add:
            paused = request.GET.get("refresh") == "off"
            context["wfr_page"] = {
                **self.run_buttons(request, obj),
                "active": not obj.is_finished and not paused,
                "watch_url": watch_url(obj),
                "runs_watch_url": runs_watch_url(obj),
            }
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def _workflow(self, obj) -> Workflow | None:
        if not obj.workflow:
            return None
        if not hasattr(obj, "_workflow_pk"):
            annotate_workflow_pks([obj], "workflow")
        return Workflow(pk=obj._workflow_pk) if obj._workflow_pk is not None else None

    def _children(self, obj) -> ChildRuns:
        if not hasattr(obj, "_child_runs"):
            obj._child_runs = ChildRuns(obj)
        return obj._child_runs

    # ---------------------------------------------------------------------------- list cells

    @admin.display(description="PHASE", ordering="phase")
    def phase_cell(self, obj):
        cell = phase_badge(obj.phase)
        if obj.cancel_requested and not obj.is_finished:
            cell = format_html("{} {}", cell, badge("cancel requested", "warn"))
        return cell

    @admin.display(description="WORKFLOW", ordering="workflow")
    def workflow_cell(self, obj):
        if not obj.workflow:
            return mark_safe('<span class="k-muted">inline</span>')
        target = self._workflow(obj)
        if target is None:
            return format_html('{} <span class="k-muted">(not found)</span>', obj.workflow)
        return link_to(target, obj.workflow, self.admin_site)

    @admin.display(description="JOBS")
    def jobs_cell(self, obj):
        return jobs_summary(obj)

    @admin.display(description="STARTED")
    def started_cell(self, obj):
        start, _ = run_window(obj)
        if start is None:
            return ""
        return format_html('<span title="{}">{} ago</span>', timestamp(start), age(start))

    @admin.display(description="DURATION")
    def duration_cell(self, obj):
        start, end = run_window(obj)
        if start is None or (end is None and obj.is_finished):
            return ""
        text = elapsed(max(0.0, ((end or timezone.now()) - start).total_seconds()))
        title = f"{timestamp(start)} → {timestamp(end) if end else 'now'}"
        if end is None:
            return format_html(
                '<span title="{}">{} <span class="k-muted">so far</span></span>', title, text
            )
        return format_html('<span title="{}">{}</span>', title, text)

    @admin.display(description="MESSAGE")
    def message_cell(self, obj):
        message = compact(as_dict(obj.status).get("message"))
        if not message:
            return ""
        short = message if len(message) <= 120 else message[:119] + "…"
        return format_html('<span title="{}">{}</span>', message, short)

    # ---------------------------------------------------------------------------- detail

    def job_anchors(self, obj) -> dict[str, str]:
        return {job: f"job-{index}" for index, job in enumerate(job_ids(obj))}

    @admin.display(description="steps")
    def step_graph_display(self, obj):
        children = self._children(obj)
        site = self.admin_site

        def links(run: Run) -> tuple[str, str]:
            url = admin_url(site, "scheduling_run_change", run.pk) or ""
            return url, f"{url}#run-log" if url else ""

        return step_graph.render(obj, children.for_step, links)

    @admin.display(description="graph")
    def graph_display(self, obj):
        jobs = {job: spec_jobs(obj.spec).get(job, {}) for job in job_ids(obj)}
        anchors = self.job_anchors(obj)
        svg = graph.render_svg(
            jobs,
            job_phases(obj),
            links={job: f"#{anchor}" for job, anchor in anchors.items()},
            title=f"jobs of WorkflowRun {obj.namespace}/{obj.name}",
        )
        note = (
            format_html(
                '<p class="k-muted">This page follows the run live while it is {}. '
                '<a href="?refresh=off">Stop following</a></p>',
                obj.phase,
            )
            if not obj.is_finished
            else ""
        )
        return format_html("{}{}{}", graph_html(svg), jobs_summary(obj), note)

    @admin.display(description="jobs")
    def jobs_display(self, obj):
        spec, status = spec_jobs(obj.spec), status_jobs(obj.status)
        if not job_ids(obj):
            return NONE
        children = self._children(obj)
        nested = self._nested_runs(obj, status)
        parts = []
        for job, anchor in self.job_anchors(obj).items():
            job_spec, job_status = spec.get(job, {}), status.get(job, {})
            facts = [phase_badge(job_status.get("phase"), "Pending")]
            if job_spec.get("runs-on"):
                facts.append(
                    format_html(
                        '<span class="k-muted">runs on</span> <code>{}</code>',
                        compact(job_spec["runs-on"]),
                    )
                )
            needs = job_spec.get("needs")
            if needs:
                needs = needs if isinstance(needs, list) else [needs]
                facts.append(format_html('<span class="k-muted">needs</span> {}', code_list(needs)))
            if job_spec.get("uses"):
                facts.append(
                    format_html(
                        '<span class="k-muted">uses</span> <code>{}</code>',
                        compact(job_spec["uses"]),
                    )
                )
            called = compact(job_status.get("workflowRunName"))
            if called:
                facts.append(
                    format_html(
                        '<span class="k-muted">WorkflowRun</span> {}',
                        link_to(nested.get(called), called, self.admin_site)
                        if nested.get(called)
                        else format_html('{} <span class="k-muted">(not found)</span>', called),
                    )
                )
            sections = [
                format_html(
                    '<h3 id="{}" class="k-job">{}</h3><p>{}</p>',
                    anchor,
                    job,
                    format_html_join(" ", "{}", ((f,) for f in facts)),
                ),
                steps_table(self.admin_site, job, job_status, children)
                if not job_spec.get("uses") or job_status.get("steps")
                else "",
            ]
            if as_dict(job_status.get("outputs")):
                sections.append(
                    format_html(
                        '<p class="k-muted">outputs</p>{}', key_value_table(job_status["outputs"])
                    )
                )
            if as_dict(job_status.get("artifacts")):
                sections.append(
                    format_html(
                        '<p class="k-muted">artifacts</p>{}',
                        artifacts_table(self.admin_site, job_status["artifacts"], children),
                    )
                )
            parts.append(
                format_html(
                    '<div class="k-job-box">{}</div>',
                    format_html_join("", "{}", ((s,) for s in sections)),
                )
            )
        return format_html_join("", "{}", ((p,) for p in parts))

    def _nested_runs(self, obj, status: dict[str, dict]) -> dict[str, WorkflowRun]:
        names = {compact(job.get("workflowRunName")) for job in status.values()} - {""}
        if not names:
            return {}
        rows = WorkflowRun.objects.filter(namespace=obj.namespace, name__in=names)
        return {row.name: row for row in rows}

    @admin.display(description="workflow")
    def workflow_display(self, obj):
        return self.workflow_cell(obj)

    @admin.display(description="message")
    def message_display(self, obj):
        message = compact(as_dict(obj.status).get("message"))
        return format_html('<span class="k-pre">{}</span>', message) if message else NONE

    @admin.display(description="inputs")
    def inputs_display(self, obj):
        return key_value_table(as_dict(obj.spec).get("inputs"))

    @admin.display(description="outputs")
    def outputs_display(self, obj):
        values = as_dict(as_dict(obj.status).get("outputs"))
        expressions = as_dict(as_dict(obj.spec).get("outputs"))
        if not (values or expressions):
            return NONE
        rows = [
            (
                format_html("<code>{}</code>", key),
                format_html('<span class="k-pre">{}</span>', compact(values[key]))
                if key in values
                else mark_safe('<span class="k-muted">not yet</span>'),
                format_html("<code>{}</code>", compact(expressions[key]))
                if key in expressions
                else "",
            )
            for key in sorted({*values, *expressions})
        ]
        return simple_table(("name", "value", "from"), rows)

    @admin.display(description="snapshot")
    def snapshot_display(self, obj):
        """The ControllerRevision of what the run resolved at its start: the recorded one."""
        status = as_dict(obj.status)
        name = compact(status.get("snapshotName"))
        if not name:
            return NONE
        revision = ControllerRevision.objects.filter(namespace=obj.namespace, name=name).first()
        recorded = {
            as_dict(c).get("uid")
            for c in as_list(status.get("children"))
            if as_dict(c).get("kind") == "ControllerRevision"
        }
        if revision is None or str(revision.uid) not in recorded:
            return format_html('{} <span class="k-muted">(not found)</span>', name)
        return link_to(revision, name, self.admin_site)

    @admin.display(description="job workspaces")
    def workspaces_display(self, obj):
        return job_workspaces.table(obj, self.admin_site)

    @admin.display(description="cancel requested")
    def cancel_display(self, obj):
        return badge("yes", "warn") if obj.cancel_requested else "no"

    # ---------------------------------------------------------------------------- actions

    @admin.action(permissions=["change"], description="Cancel")
    def cancel_workflow_runs(self, request, queryset):
        """Ask each unfinished WorkflowRun to stop: the controller cancels its children."""
        self.request_cancellation(
            request, queryset, finished=lambda run: run.is_finished, plural="WorkflowRuns"
        )


def watch_url(obj: WorkflowRun) -> str:
    """The WorkflowRun's own watch (the page's live.js follows it)."""
    base = f"/apis/kruntimes.io/v1alpha1/namespaces/{obj.namespace}/workflowruns"
    return f"{base}?watch=true&fieldSelector=metadata.name%3D{obj.name}"


def runs_watch_url(obj: WorkflowRun) -> str:
    """The watch of the Runs the run made (by the controller's label)."""
    base = f"/apis/kruntimes.io/v1alpha1/namespaces/{obj.namespace}/runs"
    return f"{base}?watch=true&labelSelector={WORKFLOWRUN_UID}%3D{obj.uid}"


# ------------------------------------------------------------------------------ Workflow


def annotate_run_counts(workflows: Iterable[Workflow]) -> None:
    """Set ``_run_count`` on each Workflow of a page: one query."""
    workflows = list(workflows)
    counts: dict[tuple[str, str], int] = {}
    if workflows:
        rows = (
            WorkflowRun.objects.filter(
                namespace__in={w.namespace for w in workflows},
                workflow__in={w.name for w in workflows},
            )
            .values("namespace", "workflow")
            .annotate(total=Count("pk"))
            .order_by()
        )
        counts = {(row["namespace"], row["workflow"]): row["total"] for row in rows}
    for workflow in workflows:
        workflow._run_count = counts.get((workflow.namespace, workflow.name), 0)


def names_list(values: Any) -> SafeString:
    if isinstance(values, dict):
        values = sorted(values)
    elif isinstance(values, list):
        values = [compact(as_dict(v).get("name")) if isinstance(v, dict) else v for v in values]
    else:
        values = []
    return code_list(values) if values else NONE


@admin.register(Workflow)
class WorkflowAdmin(WorkflowSubmitMixin, ResourceAdmin):
    change_form_template = "admin/workflows/workflow/change_form.html"
    detail_fieldsets = [
        ("Jobs", {"fields": ["graph_display", "jobs_display"]}),
        ("Interface", {"fields": ["inputs_display", "outputs_display"]}),
        ("Runs", {"fields": ["runs_display"]}),
    ]

    def get_list_display(self, request):
        return [
            "name_cell",
            "namespace_cell",
            "jobs_count_cell",
            "inputs_cell",
            "runs_cell",
            "conditions_cell",
            "labels_cell",
            "age_cell",
        ]

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        annotate_run_counts(changelist.result_list)
        return changelist

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and not add and may(request.user, "create", obj.namespace):
            context["submit_url"] = self.submit_url(obj)
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def _runs_url(self, obj) -> str | None:
        url = admin_url(self.admin_site, "workflows_workflowrun_changelist")
        if url is None:
            return None
        return f"{url}?{urlencode({'namespace': obj.namespace, 'workflow': obj.name})}"

    @admin.display(description="JOBS")
    def jobs_count_cell(self, obj):
        return len(spec_jobs(obj.spec))

    @admin.display(description="INPUTS")
    def inputs_cell(self, obj):
        return names_list(as_dict(obj.spec).get("inputs"))

    @admin.display(description="RUNS")
    def runs_cell(self, obj):
        if not hasattr(obj, "_run_count"):
            annotate_run_counts([obj])
        url = self._runs_url(obj)
        if not obj._run_count or url is None:
            return obj._run_count
        return format_html('<a href="{}">{}</a>', url, obj._run_count)

    @admin.display(description="graph")
    def graph_display(self, obj):
        jobs = spec_jobs(obj.spec)
        return graph_html(
            graph.render_svg(jobs, None, title=f"jobs of Workflow {obj.namespace}/{obj.name}")
        )

    @admin.display(description="jobs")
    def jobs_display(self, obj):
        rows = []
        for job, spec in spec_jobs(obj.spec).items():
            needs = spec.get("needs")
            steps = steps_of(spec)
            rows.append(
                (
                    format_html("<strong>{}</strong>", job),
                    compact(spec.get("runs-on")),
                    code_list(needs if isinstance(needs, list) else [needs]) if needs else "",
                    format_html("<code>{}</code>", compact(spec.get("uses")))
                    if spec.get("uses")
                    else code_list(
                        [compact(s.get("name")) or f"#{i + 1}" for i, s in enumerate(steps)]
                    ),
                )
            )
        if not rows:
            return NONE
        return simple_table(("job", "runs on", "needs", "steps / uses"), rows)

    @admin.display(description="inputs")
    def inputs_display(self, obj):
        return declared_inputs_table(as_dict(obj.spec).get("inputs"))

    @admin.display(description="outputs")
    def outputs_display(self, obj):
        return key_value_table(as_dict(obj.spec).get("outputs"), "from")

    @admin.display(description="WorkflowRuns started from it")
    def runs_display(self, obj):
        runs = list(
            WorkflowRun.objects.filter(namespace=obj.namespace, workflow=obj.name).order_by(
                "-creation_timestamp", "-pk"
            )[: RUNS_SHOWN + 1]
        )
        if not runs:
            return NONE
        rows = [
            (
                link_to(run, run.name, self.admin_site),
                phase_badge(run.phase),
                jobs_summary(run),
                format_html(
                    '<span title="{}">{} ago</span>',
                    timestamp(run.creation_timestamp),
                    age(run.creation_timestamp),
                ),
            )
            for run in runs[:RUNS_SHOWN]
        ]
        table = simple_table(("WorkflowRun", "phase", "jobs", "created"), rows)
        url = self._runs_url(obj)
        if len(runs) > RUNS_SHOWN and url:
            return format_html(
                '{}<p><a href="{}">all WorkflowRuns of this Workflow</a></p>', table, url
            )
        return table


# ------------------------------------------------------------------------------ Action


@admin.register(Action)
class ActionAdmin(ResourceAdmin):
    change_form_template = "admin/workflows/change_form.html"
    detail_fieldsets = [
        ("Steps", {"fields": ["steps_display"]}),
        ("Interface", {"fields": ["inputs_display", "outputs_display"]}),
    ]

    def get_list_display(self, request):
        return [
            "name_cell",
            "namespace_cell",
            "steps_count_cell",
            "inputs_cell",
            "outputs_cell",
            "conditions_cell",
            "labels_cell",
            "age_cell",
        ]

    @admin.display(description="STEPS")
    def steps_count_cell(self, obj):
        return len(steps_of(as_dict(obj.spec)))

    @admin.display(description="INPUTS")
    def inputs_cell(self, obj):
        return names_list(as_dict(obj.spec).get("inputs"))

    @admin.display(description="OUTPUTS")
    def outputs_cell(self, obj):
        return names_list(as_dict(obj.spec).get("outputs"))

    @admin.display(description="steps")
    def steps_display(self, obj):
        rows = []
        for index, step in enumerate(steps_of(as_dict(obj.spec))):
            if "run" in step:
                what = format_html('<pre class="k-yaml">{}</pre>', compact(step.get("run")))
            elif "uses" in step:
                what = format_html(
                    '<span class="k-muted">uses</span> <code>{}</code>', compact(step["uses"])
                )
            else:
                what = NONE
            rows.append(
                (
                    format_html(
                        "<strong>{}</strong>", compact(step.get("name")) or f"#{index + 1}"
                    ),
                    what,
                    inline_pairs(step.get("with")),
                    names_list(step.get("env")),
                )
            )
        if not rows:
            return NONE
        return simple_table(("step", "run / uses", "with", "env"), rows)

    @admin.display(description="inputs")
    def inputs_display(self, obj):
        return declared_inputs_table(as_dict(obj.spec).get("inputs"))

    @admin.display(description="outputs")
    def outputs_display(self, obj):
        outputs = as_dict(as_dict(obj.spec).get("outputs"))
        if not outputs:
            return NONE
        rows = []
        for name, decl in sorted(outputs.items()):
            decl = decl if isinstance(decl, dict) else {"value": decl}
            rows.append(
                (
                    format_html("<code>{}</code>", name),
                    format_html("<code>{}</code>", compact(decl.get("value"))),
                    compact(decl.get("description")),
                )
            )
        return simple_table(("name", "value", "description"), rows)


# the overview (portal.overview): WorkflowRuns are workloads, Workflows and Actions definitions
overview.place("workloads", "workflows.workflowrun", order=20)
overview.place("definitions", "workflows.workflow", order=10)
overview.place("definitions", "workflows.action", order=20)
overview.register_tile(
    overview.Tile(
        "workflowruns",
        "WorkflowRuns",
        "workloads",
        overview.phase_tile(
            WorkflowRun,
            "workflows.workflowrun",
            "kruntimes.io",
            "workflowruns",
            ("Pending", "Running"),
            ("Succeeded", "Failed", "Cancelled"),
        ),
        order=50,
    )
)
