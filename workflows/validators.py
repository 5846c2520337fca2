"""The rules between fields of Workflow, WorkflowRun and Action specs, and WorkflowRun's
transition rules.

The ``*_causes`` functions read a raw spec (types unchecked: the serializers report those)
and return every cause at once, paths relative to the object they are given; the serializers
call them from ``cross_field_causes``. ``WORKFLOW_RUN_VALIDATORS`` are the kind's
``(new, old|None) -> causes`` rules: the frozen spec stays as created, cancellation is one-way.

Expressions (``workflows.expressions``): a step's run, args, env and with may read the declared
inputs, earlier steps of its job and the jobs in its needs; a job's outputs its own steps;
the workflow's outputs any job. A step's artifact comes from a job in its job's needs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Set
from typing import Any

from portal.machinery import errors
from portal.machinery.errors import FieldError
from scheduling.validators import IMMUTABLE_MESSAGE, cancel_requested_is_one_way

from .expressions import Scope, check

# jobs.<job>.artifacts.<artifact name> (the job is the shortest label value that fits)
ARTIFACT_FROM = re.compile(r"jobs\.(?P<job>[A-Za-z0-9][-A-Za-z0-9_.]*?)\.artifacts\.(?P<name>.+)")
RUN_IMMUTABLE_FIELDS = ("workflowRef", "inputs", "outputs", "jobs", "rerunOf")


def _has(data: Any, key: str) -> bool:
    return isinstance(data, dict) and data.get(key) is not None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def keys(value: Any) -> frozenset[str]:
    return frozenset(_dict(value))


def _strings(value: Any) -> list[str]:
    return [item for item in _list(value) if isinstance(item, str)]


def step_names(steps: Any) -> frozenset[str]:
    """The names of ``steps`` that are strings (any other is the serializer's type error)."""
    return frozenset(
        name for step in _list(steps) if isinstance(name := _dict(step).get("name"), str)
    )


# --- one step, one job ------------------------------------------------------------------


def step_shape_causes(step: dict) -> list[FieldError]:
    """Exactly one of run/uses; with only with uses; args and env only on run steps."""
    causes = []
    if _has(step, "run") == _has(step, "uses"):
        causes.append(errors.invalid("", "Invalid value: exactly one of run or uses must be set"))
    if _has(step, "with") and not _has(step, "uses"):
        causes.append(errors.forbidden("with", "Forbidden: with can only be set when uses is set"))
    if _has(step, "uses"):
        causes += [
            errors.forbidden(field, f"Forbidden: {field} can only be set on run steps")
            for field in ("args", "env")
            if _has(step, field)
        ]
    return causes


def job_shape_causes(job: dict) -> list[FieldError]:
    """Exactly one of steps/uses; with only with uses; runs-on for a steps job; step names
    unique within the job."""
    causes = []
    if _has(job, "steps") == _has(job, "uses"):
        causes.append(errors.invalid("", "Invalid value: exactly one of steps or uses must be set"))
    if _has(job, "with") and not _has(job, "uses"):
        causes.append(errors.forbidden("with", "Forbidden: with can only be set when uses is set"))
    if _has(job, "steps") and not _has(job, "runs-on"):
        causes.append(errors.required("runs-on", "Required value: a job with steps needs runs-on"))
    return causes + unique_step_names(job.get("steps"), "steps")


def unique_step_names(steps: Any, path: str) -> list[FieldError]:
    seen: set[str] = set()
    causes = []
    for index, step in enumerate(_list(steps)):
        name = _dict(step).get("name")
        if isinstance(name, str):
            if name in seen:
                causes.append(errors.duplicate(f"{path}[{index}].name", name))
            seen.add(name)
    return causes


# --- jobs: needs, cycles, expressions, artifacts -----------------------------------------


def _needs_causes(jobs: dict) -> list[FieldError]:
    causes = []
    for job, spec in jobs.items():
        for index, need in enumerate(_list(_dict(spec).get("needs"))):
            if not isinstance(need, str):
                continue
            path = f"jobs.{job}.needs[{index}]"
            if need == job:
                causes.append(
                    errors.invalid(path, f'Invalid value: "{need}": a job cannot need itself')
                )
            elif need not in jobs:
                causes.append(
                    errors.invalid(path, f'Invalid value: "{need}": no job of that name here')
                )
    return causes


def needs_of(jobs: dict, job: str) -> list[str]:
    """The other jobs of ``jobs`` that ``job`` needs (unknown names and itself left out)."""
    return [n for n in _strings(_dict(jobs.get(job)).get("needs")) if n in jobs and n != job]


def dependency_cycles(jobs: dict) -> list[list[str]]:
    """Each cycle of needs once, as the path that closes it (``[a, b, a]``), in name order."""
    state: dict[str, str] = {}  # "open" while on the path, "done" after
    path: list[str] = []
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def visit(job: str) -> None:
        state[job] = "open"
        path.append(job)
        for need in sorted(set(needs_of(jobs, job))):
            if state.get(need) == "open":
                cycle = path[path.index(need) :] + [need]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    cycles.append(cycle)
            elif need not in state:
                visit(need)
        path.pop()
        state[job] = "done"

    for job in sorted(jobs):
        if job not in state:
            visit(job)
    return cycles


def _cycle_causes(jobs: dict) -> list[FieldError]:
    return [
        errors.invalid("jobs", f"Invalid value: dependency cycle {' -> '.join(cycle)}")
        for cycle in dependency_cycles(jobs)
    ]


def _texts(step: dict) -> Iterable[tuple[str, Any]]:
    """(relative path, value) of every step field an expression may be in."""
    yield "run", step.get("run")
    for index, arg in enumerate(_list(step.get("args"))):
        yield f"args[{index}]", arg
    for field in ("env", "with"):
        for key, value in _dict(step.get(field)).items():
            yield f"{field}[{key}]", value


def _check(value: Any, path: str, scope: Scope) -> list[FieldError]:
    return check(value, path, scope) if isinstance(value, str) else []


def steps_causes(steps: Any, path: str, scope: Scope) -> list[FieldError]:
    """Expressions of a sequence of steps: each may read the steps before it (and ``scope``)."""
    causes: list[FieldError] = []
    earlier: set[str] = set()
    for index, step in enumerate(_list(steps)):
        step = _dict(step)
        here = dataclasses.replace(scope, steps=frozenset(earlier))
        for field, value in _texts(step):
            causes += _check(value, f"{path}[{index}].{field}", here)
        if isinstance(step.get("name"), str):
            earlier.add(step["name"])
    return causes


def _artifact_causes(steps: Any, path: str, needs: Set[str]) -> list[FieldError]:
    causes = []
    for index, step in enumerate(_list(steps)):
        for number, artifact in enumerate(_list(_dict(step).get("artifacts"))):
            source = _dict(artifact).get("from")
            found = ARTIFACT_FROM.fullmatch(source) if isinstance(source, str) else None
            if found is not None and found.group("job") not in needs:
                causes.append(
                    errors.invalid(
                        f"{path}[{index}].artifacts[{number}].from",
                        f'Invalid value: "{source}": {found.group("job")} is not a job listed '
                        "in needs",
                    )
                )
    return causes


def _job_causes(jobs: dict, job: str, inputs: Set[str]) -> list[FieldError]:
    spec, path = _dict(jobs[job]), f"jobs.{job}"
    needs = frozenset(needs_of(jobs, job))
    steps = spec.get("steps")
    causes = steps_causes(steps, f"{path}.steps", Scope(inputs=inputs, jobs=needs))
    causes += _artifact_causes(steps, f"{path}.steps", needs)
    for key, value in _dict(spec.get("with")).items():
        causes += _check(value, f"{path}.with[{key}]", Scope(inputs=inputs, jobs=needs))
    own_steps = step_names(steps)
    outputs_scope = Scope(
        inputs=inputs,
        steps=own_steps,
        what_steps="a step of this job",
        what_jobs="readable from a job's outputs (they read its steps)",
    )
    for key, value in _dict(spec.get("outputs")).items():
        causes += _check(value, f"{path}.outputs[{key}]", outputs_scope)
    return causes


def workflow_causes(spec: dict, *, inputs: Set[str]) -> list[FieldError]:
    """The jobs of a Workflow or a WorkflowRun spec (``inputs``: the names expressions may
    read): needs, cycles, expressions and artifact sources; and the outputs' expressions."""
    jobs = _dict(spec.get("jobs"))
    causes = _needs_causes(jobs) + _cycle_causes(jobs)
    for job in jobs:
        causes += _job_causes(jobs, job, inputs)
    scope = Scope(inputs=inputs, jobs=frozenset(jobs), what_jobs="a job of this workflow")
    for name, output in _dict(spec.get("outputs")).items():
        causes += _check(_dict(output).get("value"), f"outputs.{name}.value", scope)
    return causes


def action_causes(spec: dict) -> list[FieldError]:
    """Every Action step a run step (no uses, with or artifacts), names unique, expressions
    reading the Action's inputs and earlier steps (its outputs: any step)."""
    causes = []
    steps = _list(spec.get("steps"))
    for index, step in enumerate(steps):
        for field in ("uses", "with", "artifacts"):
            if _has(step, field):
                causes.append(
                    errors.forbidden(
                        f"steps[{index}].{field}", f"Forbidden: an Action step may not set {field}"
                    )
                )
    inputs = keys(spec.get("inputs"))
    causes += unique_step_names(steps, "steps")
    causes += steps_causes(
        steps, "steps", Scope(inputs=inputs, what_jobs="readable in an Action (it has no jobs)")
    )
    scope = Scope(inputs=inputs, steps=step_names(steps), what_steps="a step of this Action")
    for name, output in _dict(spec.get("outputs")).items():
        causes += _check(_dict(output).get("value"), f"outputs.{name}.value", scope)
    return causes


# --- WorkflowRun transitions --------------------------------------------------------------


def run_spec_immutable(new: dict, old: dict | None) -> list[FieldError]:
    """What a WorkflowRun runs is fixed at create: its jobs, outputs, inputs, workflowRef and
    the run it reruns."""
    if old is None:
        return []
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    return [
        errors.invalid(f"spec.{name}", IMMUTABLE_MESSAGE)
        for name in RUN_IMMUTABLE_FIELDS
        if new_spec.get(name) != old_spec.get(name)
    ]


WORKFLOW_RUN_VALIDATORS = (run_spec_immutable, cancel_requested_is_one_way)
