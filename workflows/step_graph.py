"""The WorkflowRun page's step graph: the jobs as groups in columns by their needs
(``graph.columns``), each step a node with its phase (colour), its duration and links to its
Run and the Run's log. HTML, so the page's watch (``portal/static/portal/live.js``) swaps it in
place as the run's Runs move; it says nothing a step's script wrote."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from portal.machinery.conditions import time_or_none
from portal.resource_admin import NONE, elapsed
from scheduling.models import Run

from . import graph
from .models import CARRIED_REASON, WorkflowRun
from .status import step_shown

UNKNOWN = graph.UNKNOWN_PHASE


def duration(run: Run | None, now: datetime) -> str:
    """How long the step's Run ran (so far, while it runs); "" before it started."""
    if run is None:
        return ""
    status = run.status if isinstance(run.status, dict) else {}
    start = time_or_none(status.get("startTime"))
    if start is None:
        return ""
    end = time_or_none(status.get("completionTime")) or getattr(run, "finished_at", None)
    return str(elapsed(max(0.0, ((end or now) - start).total_seconds())))


def _node(job: str, step: dict, state: dict, run: Run | None, links: Any, now: datetime) -> Any:
    phase, why = step_shown(state, step)
    fill, stroke, ink = graph.PHASE_COLOURS.get(phase, UNKNOWN)
    name = str(step.get("name") or "")
    run_url, log_url = links(run) if run is not None else ("", "")
    took = duration(run, now)
    title = f"{job} / {name}: {phase}" + (f" ({why})" if why else "")
    link = (
        format_html(
            '<a href="{}" class="k-step-run">Run</a> · <a href="{}" class="k-step-log">log</a>',
            run_url,
            log_url,
        )
        if run_url
        else ""
    )
    return format_html(
        '<li class="k-step-node" data-job="{}" data-step="{}" data-phase="{}" title="{}" '
        'style="background:{};border-color:{};color:{}">'
        '<span class="k-step-name">{}</span> <span class="k-step-phase">{}</span>'
        '<span class="k-step-time">{}</span> <span class="k-step-links">{}</span></li>',
        job,
        name,
        phase,
        title,
        fill,
        stroke,
        ink,
        name,
        phase,
        took,
        link,
    )


def render(wfr: WorkflowRun, runs_for: Any, links: Any) -> SafeString:
    """``runs_for(job, step, index) -> Run | None``; ``links(run) -> (run page, log)``."""
    spec_jobs = (wfr.spec or {}).get("jobs") or {}
    status_jobs = (wfr.status or {}).get("jobs") or {}
    if not isinstance(spec_jobs, dict) or not spec_jobs:
        return NONE
    now = timezone.now()
    columns = []
    for column in graph.columns(spec_jobs):
        groups = []
        for job in column:
            spec = spec_jobs.get(job) if isinstance(spec_jobs.get(job), dict) else {}
            state = status_jobs.get(job) if isinstance(status_jobs.get(job), dict) else {}
            phase = str(state.get("phase") or "Pending")
            shown = state.get("steps") or spec.get("steps") or []
            nodes = [
                _node(job, step, state, runs_for(job, step, index), links, now)
                for index, step in enumerate(s for s in shown if isinstance(s, dict))
            ]
            if spec.get("uses"):
                nodes.append(
                    format_html(
                        '<li class="k-step-node k-step-uses">uses Workflow <code>{}</code></li>',
                        spec["uses"],
                    )
                )
            fill, stroke, _ink = graph.PHASE_COLOURS.get(phase, UNKNOWN)
            carried = (
                format_html(' <span class="k-carried">carried over</span>')
                if state.get("reason") == CARRIED_REASON
                else ""
            )
            groups.append(
                format_html(
                    '<div class="k-job-group" data-job="{}" data-phase="{}" '
                    'style="border-color:{}"><div class="k-job-head" style="background:{}">'
                    "<strong>{}</strong> {}{}</div><ol>{}</ol></div>",
                    job,
                    phase,
                    stroke,
                    fill,
                    job,
                    phase,
                    carried,
                    format_html_join("", "{}", ((n,) for n in nodes)),
                )
            )
        columns.append(
            format_html(
                '<div class="k-step-column">{}</div>',
                format_html_join("", "{}", ((g,) for g in groups)),
            )
        )
    return format_html(
        '<div class="k-step-graph" id="step-graph" data-phase="{}">{}</div>',
        wfr.phase,
        format_html_join("", "{}", ((c,) for c in columns)),
    )
