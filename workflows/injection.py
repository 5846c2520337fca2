"""Script injection, made visible: a warning for each ``${{ }}`` expression inside a step's
``run``.

The controller substitutes expressions into ``run`` as text, as GitHub Actions does (a manifest
behaves the same in both), so a value holding shell syntax (an input ``"; rm -rf ~; echo "``,
a step's output) runs as code. GitHub's documented fix is to pass the value through ``env:``
and quote the variable in the script; each warning names the field and that alternative. The
write goes ahead: these are the kinds' ``warnings`` hooks (``portal.machinery.admission_warnings``).

A WorkflowRun started from a Workflow (``workflowRef``) holds that Workflow's jobs, whose writer
was warned already; only an inline WorkflowRun's jobs are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .expressions import EXPRESSION, ExpressionError, Ref, parse_ref

_NOT_ENV = re.compile(r"[^A-Z0-9_]+")


def env_name(ref: Ref) -> str:
    """A variable name for the value: ``inputs.who`` -> ``WHO``, ``steps.build.outputs.tag``
    -> ``BUILD_TAG``."""
    parts = [ref.name] if ref.scope == "inputs" else [ref.name, ref.key]
    name = _NOT_ENV.sub("_", "_".join(parts).upper()).strip("_") or "VALUE"
    return f"_{name}" if name[0].isdigit() else name


def warning(path: str, ref: Ref) -> str:
    expression = f"${{{{ {ref} }}}}"
    name = env_name(ref)
    return (
        f"{path}: {expression} is pasted into the script text, so a value holding shell "
        f"syntax runs as code (script injection); "
        f'use env: {{{name}: "{expression}"}} and "${name}" in run'
    )


def run_warnings(run: Any, path: str) -> list[str]:
    """One warning per distinct expression in a ``run`` text (none for a malformed one:
    admission refuses that)."""
    if not isinstance(run, str):
        return []
    found: list[str] = []
    for match in EXPRESSION.finditer(run):
        try:
            text = warning(path, parse_ref(match.group(1)))
        except ExpressionError:
            continue
        if text not in found:
            found.append(text)
    return found


def _steps(steps: Any, path: str) -> Iterator[str]:
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if isinstance(step, dict):
            yield from run_warnings(step.get("run"), f"{path}[{index}].run")


def _spec(manifest: dict) -> dict:
    spec = manifest.get("spec")
    return spec if isinstance(spec, dict) else {}


def jobs_warnings(manifest: dict) -> list[str]:
    """Each step ``run`` of ``spec.jobs`` (a Workflow, an inline WorkflowRun)."""
    jobs = _spec(manifest).get("jobs")
    found: list[str] = []
    for job, spec in (jobs if isinstance(jobs, dict) else {}).items():
        if isinstance(spec, dict):
            found += _steps(spec.get("steps"), f"spec.jobs.{job}.steps")
    return found


def workflow_run_warnings(manifest: dict) -> list[str]:
    if _spec(manifest).get("workflowRef"):
        return []
    return jobs_warnings(manifest)


def action_warnings(manifest: dict) -> list[str]:
    return list(_steps(_spec(manifest).get("steps"), "spec.steps"))
