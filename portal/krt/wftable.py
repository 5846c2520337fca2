"""A WorkflowRun's job/step table (JOB STEP PHASE DURATION RUN REASON), from its status and
the Runs it started, without the server's code (that needs Django).

As the server's ``run-workflow`` prints it (``workflows.status.step_shown``): a step its
ended job never started is Skipped, with its job's story as the reason; durations come from
the step Runs' ``startTime``/``completionTime``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

HEADER = ["JOB", "STEP", "PHASE", "DURATION", "RUN", "REASON"]
NONE = "-"
REASON_WIDTH = 60
FINISHED = ("Succeeded", "Failed", "Cancelled")
CARRIED_OVER = "CarriedOver"  # a rerun's job that succeeded before (spec.rerunOf.failedJobsOnly)


def step_shown(job: Mapping[str, Any], step: Mapping[str, Any]) -> tuple[str, str]:
    """(phase, why) of a step: Pending in a job that is over means it never ran (Skipped)."""
    phase = str(step.get("phase") or "Pending")
    if phase != "Pending":
        return phase, ""
    job_phase = job.get("phase")
    if job_phase == "Failed":
        failed = any(
            s.get("phase") == "Failed" for s in job.get("steps") or [] if isinstance(s, dict)
        )
        return "Skipped", "an earlier step failed" if failed else str(job.get("message") or "")
    if job_phase in ("Skipped", "Succeeded"):
        return "Skipped", str(job.get("message") or "its job was skipped")
    return phase, ""


def rows(
    wfr: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]], now: datetime | None = None
) -> list[list[str]]:
    """The table's rows (header first): a row per job (STEP ``-``), then one per step in
    spec order. ``runs`` maps a Run's name to its status."""
    now = now or datetime.now(UTC)
    jobs_status = (wfr.get("status") or {}).get("jobs") or {}
    table = [HEADER]
    jobs = (wfr.get("spec") or {}).get("jobs") or {}
    for job in job_order(jobs):
        job_spec = jobs[job]
        status = jobs_status.get(job) or {}
        by_name = {s.get("name"): s for s in status.get("steps") or [] if isinstance(s, dict)}
        step_rows = []
        spans = []
        for step in (job_spec or {}).get("steps") or []:
            step_status = by_name.get(step.get("name")) or {}
            phase, why = step_shown(status, step_status)
            run_name = step_status.get("runName") or ""
            span = _span(runs.get(run_name) or {}, now)
            spans.append(span)
            if phase not in ("Succeeded", "Skipped") and not why:
                why = (
                    str((runs.get(run_name) or {}).get("message") or "")
                    if phase != "Running"
                    else ""
                )
            step_rows.append(
                [
                    job,
                    str(step.get("name", "")),
                    phase,
                    _duration(span),
                    run_name or NONE,
                    _reason(why),
                ]
            )
        job_phase = str(status.get("phase") or "Pending")
        job_reason = status.get("message") if job_phase != "Succeeded" else ""
        if status.get("reason") == CARRIED_OVER:  # the server's words: where it succeeded
            job_reason = status.get("message") or "carried over"
        run_of_job = status.get("workflowRunName") or NONE
        table.append(
            [job, NONE, job_phase, _duration(_union(spans)), run_of_job, _reason(job_reason)]
        )
        table.extend(step_rows)
    return table


def job_order(jobs: Mapping[str, Any]) -> list[str]:
    """Jobs in the order they can run: by the length of their ``needs`` chain, then name."""
    depth: dict[str, int] = {}

    def depth_of(job: str, seen: frozenset[str] = frozenset()) -> int:
        if job not in depth:
            needs = [n for n in (jobs.get(job) or {}).get("needs") or [] if n in jobs]
            depth[job] = 1 + max(
                (depth_of(n, seen | {job}) for n in needs if n not in seen), default=-1
            )
        return depth[job]

    return sorted(jobs, key=lambda job: (depth_of(job), job))


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _span(run_status: Mapping[str, Any], now: datetime) -> tuple[datetime, datetime] | None:
    start = _parse(run_status.get("startTime"))
    if start is None:
        return None
    return start, _parse(run_status.get("completionTime")) or now


def _union(spans: list[tuple[datetime, datetime] | None]) -> tuple[datetime, datetime] | None:
    known = [s for s in spans if s]
    if not known:
        return None
    return min(s[0] for s in known), max(s[1] for s in known)


def _duration(span: tuple[datetime, datetime] | None) -> str:
    if span is None:
        return NONE
    # the API's times are whole seconds: a step within one second is "<1s", not "0s"
    seconds = max(0.0, (span[1] - span[0]).total_seconds())
    if seconds < 1:
        return "<1s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _reason(text: Any) -> str:
    text = " ".join(str(text or "").split())
    if len(text) > REASON_WIDTH:
        text = text[: REASON_WIDTH - 1] + "…"
    return text or NONE


def job_progress(wfr: Mapping[str, Any]) -> dict[str, str]:
    """job → ``phase`` (with the running step's name): what ``--wait`` reports on change."""
    jobs_status = (wfr.get("status") or {}).get("jobs") or {}
    shown = {}
    for job in (wfr.get("spec") or {}).get("jobs") or {}:
        status = jobs_status.get(job) or {}
        phase = str(status.get("phase") or "Pending")
        running = [s.get("name") for s in status.get("steps") or [] if s.get("phase") == "Running"]
        shown[job] = f"{phase} ({', '.join(map(str, running))})" if running else phase
    return shown
