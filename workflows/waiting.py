"""Following a WorkflowRun from the command line (``manage.py run-workflow --wait``): its
job/step table, printed again whenever it changes, until the run ends or time runs out.

``sleep`` and ``monotonic`` are module attributes so tests can drive the clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from portal.cli import format_table
from portal.machinery import errors

from .models import FINISHED_RUN_PHASES, WorkflowRun
from .status import step_shown

HEADER = ["JOB", "STEP", "PHASE", "RUN", "OUTPUTS", "REASON"]
REASON_WIDTH = 60
NONE = "-"
sleep = time.sleep
monotonic = time.monotonic


def table(run: WorkflowRun) -> str:
    """One row per job (STEP ``-``; RUN the child WorkflowRun of a reusable call), then one
    per step and Action step, in spec order; what the status does not name yet is Pending, a
    step its ended job never started is Skipped; REASON says why a job or step did not run
    or succeed."""
    jobs_status = (run.status or {}).get("jobs") or {}
    rows = [HEADER]
    for job, job_spec in ((run.spec or {}).get("jobs") or {}).items():
        status = jobs_status.get(job) or {}
        rows.append(
            [
                job,
                NONE,
                status.get("phase") or "Pending",
                status.get("workflowRunName") or NONE,
                outputs_text(status.get("outputs")),
                _reason(status.get("message") if status.get("phase") != "Succeeded" else ""),
            ]
        )
        by_name = {s.get("name"): s for s in status.get("steps") or [] if isinstance(s, dict)}
        for step in (job_spec or {}).get("steps") or []:
            step_status = by_name.get(step.get("name")) or {}
            rows.append(_row(job, step.get("name", ""), step_status, status))
            for action_step in step_status.get("actionSteps") or []:
                name = f"{step.get('name')}/{action_step.get('name')}"
                rows.append(_row(job, name, action_step, status))
    return format_table(rows)


def outputs_text(outputs) -> str:
    """``key: value, ...`` (each value cut to 40 characters), ``-`` for none."""
    if not isinstance(outputs, dict) or not outputs:
        return NONE
    return ", ".join(f"{key}: {str(value)[:40]}" for key, value in sorted(outputs.items()))


def _reason(text) -> str:
    text = " ".join(str(text or "").split())
    if len(text) > REASON_WIDTH:
        text = text[: REASON_WIDTH - 1] + "…"
    return text or NONE


def _row(job: str, step: str, status: dict, job_status: dict) -> list[str]:
    phase, why = step_shown(job_status, status)
    return [
        job,
        step,
        phase,
        status.get("runName") or NONE,
        outputs_text(status.get("outputs")),
        _reason(why),
    ]


def wait(
    run: WorkflowRun, write: Callable[[str], None], *, timeout: float = 0, interval: float = 1.0
) -> tuple[WorkflowRun, bool]:
    """Poll ``run`` until it is finished, writing its table each time it changes; returns
    the last state read and whether it finished (False: ``timeout`` seconds passed first).
    A WorkflowRun deleted meanwhile is a NotFound StatusError."""
    deadline = monotonic() + timeout if timeout > 0 else None
    shown = ""
    while True:
        current = WorkflowRun.objects.filter(pk=run.pk).first()
        if current is None:
            raise errors.not_found("workflowruns", "kruntimes.io", run.name)
        run = current
        text = table(run)
        if text != shown:
            write(text)
            shown = text
        if run.phase in FINISHED_RUN_PHASES:
            return run, True
        if deadline is not None and monotonic() >= deadline:
            return run, False
        sleep(interval)
