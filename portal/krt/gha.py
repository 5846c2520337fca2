"""``krt wf run -f``: a WorkflowRun manifest, or a small GitHub Actions workflow converted to
an inline WorkflowRun.

What converts: ``name`` (the run's name prefix), ``on`` (ignored: krt starts it now),
``jobs.<id>.runs-on`` (a Runtime name), ``needs``, ``outputs``, ``steps[].run``,
``steps[].id`` (the step's name, so ``steps.<id>.outputs`` expressions keep working),
``steps[].name`` (made a label value when there is no id), ``steps[].env``; in expressions
GitHub's ``needs.<job>.outputs`` becomes this API's ``jobs.<job>.outputs``. Anything else
(``uses:`` actions, ``with``, ``strategy``, ``container``, ``services``, ``if``, top-level
``env``...) has no faithful meaning here, so it is refused with its line, never dropped.
The file is read with PyYAML's composer, whose nodes keep their line numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from .errors import KrtError

TOP_KEYS = ("name", "on", "jobs")
JOB_KEYS = ("runs-on", "needs", "steps", "outputs")
STEP_KEYS = ("id", "name", "run", "env")
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
NAME_LIMIT = 63
NEEDS_REF = re.compile(r"(\$\{\{\s*)needs\.")


class ConversionError(KrtError):
    """A key or value the conversion cannot carry over, with the file's line (1-based)."""

    def __init__(self, source: str, line: int, message: str) -> None:
        super().__init__(f"{source}:{line}: {message}")
        self.line = line


@dataclass(frozen=True)
class Loaded:
    """What a ``-f`` file held: ``spec`` for a WorkflowRun; ``name`` its metadata.name (a
    manifest's) or ``generate_from`` (a GitHub Actions workflow's ``name``)."""

    spec: dict[str, Any]
    name: str | None
    generate_from: str
    metadata: dict[str, Any]


def load(text: str, source: str = "<stdin>") -> Loaded:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise ConversionError(source, line, f"not YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(node, yaml.MappingNode):
        raise ConversionError(source, _line(node), "expected a mapping (a WorkflowRun or jobs:)")
    keys = {k.value for k, _ in node.value}
    if "kind" in keys or "apiVersion" in keys:
        return _manifest(yaml.safe_load(text), source, _line(node))
    return convert(node, source)


def _manifest(data: dict[str, Any], source: str, line: int) -> Loaded:
    if data.get("kind") != "WorkflowRun":
        raise ConversionError(
            source,
            line,
            f'kind "{data.get("kind")}": expected a WorkflowRun manifest '
            "(start a Workflow with: krt wf trigger NAME)",
        )
    meta = dict(data.get("metadata") or {})
    return Loaded(
        spec=dict(data.get("spec") or {}),
        name=meta.get("name"),
        generate_from=str(meta.get("generateName") or "wfr").rstrip("-"),
        metadata=meta,
    )


def convert(node: yaml.MappingNode, source: str) -> Loaded:
    top = _mapping(node, source, TOP_KEYS, "")
    if "jobs" not in top:
        raise ConversionError(source, _line(node), "a workflow needs jobs:")
    name = _scalar(top["name"], source, "name") if "name" in top else "workflow"
    jobs_node = top["jobs"]
    if not isinstance(jobs_node, yaml.MappingNode) or not jobs_node.value:
        raise ConversionError(source, _line(jobs_node), "jobs: expected a mapping of jobs")
    jobs = {}
    for key, value in jobs_node.value:
        jobs[key.value] = _job(value, source, f"jobs.{key.value}")
    return Loaded(
        spec={"jobs": jobs}, name=None, generate_from=slug(name) or "workflow", metadata={}
    )


def _job(node: yaml.Node, source: str, where: str) -> dict[str, Any]:
    fields = _mapping(node, source, JOB_KEYS, where)
    if "runs-on" not in fields:
        raise ConversionError(source, _line(node), f"{where}: runs-on (a Runtime name) is required")
    if "steps" not in fields:
        raise ConversionError(source, _line(node), f"{where}: steps are required")
    job: dict[str, Any] = {"runs-on": _scalar(fields["runs-on"], source, f"{where}.runs-on")}
    if "needs" in fields:
        needs = fields["needs"]
        if isinstance(needs, yaml.SequenceNode):
            job["needs"] = [_scalar(n, source, f"{where}.needs") for n in needs.value]
        else:
            job["needs"] = [_scalar(needs, source, f"{where}.needs")]
    steps_node = fields["steps"]
    if not isinstance(steps_node, yaml.SequenceNode) or not steps_node.value:
        raise ConversionError(source, _line(steps_node), f"{where}.steps: expected a list")
    taken: set[str] = set()
    job["steps"] = [
        _step(step, source, f"{where}.steps[{i}]", i, taken)
        for i, step in enumerate(steps_node.value)
    ]
    if "outputs" in fields:
        job["outputs"] = _string_map(fields["outputs"], source, f"{where}.outputs")
    return job


def _step(node: yaml.Node, source: str, where: str, index: int, taken: set[str]) -> dict[str, Any]:
    fields = _mapping(node, source, STEP_KEYS, where)
    if "run" not in fields:
        raise ConversionError(source, _line(node), f"{where}: run is required")
    if "id" in fields:
        name = _scalar(fields["id"], source, f"{where}.id")
        if not LABEL_VALUE.match(name) or len(name) > NAME_LIMIT:
            raise ConversionError(
                source,
                _line(fields["id"]),
                f'{where}.id "{name}": must be a label value '
                "(letters, digits, '-', '_', '.'; at most 63)",
            )
    else:
        label = _scalar(fields["name"], source, f"{where}.name") if "name" in fields else ""
        name = slug(label) or f"step-{index + 1}"
    name = _unique(name, taken)
    step: dict[str, Any] = {"name": name, "run": _scalar(fields["run"], source, f"{where}.run")}
    if "env" in fields:
        step["env"] = _string_map(fields["env"], source, f"{where}.env")
    return step


def _mapping(
    node: yaml.Node, source: str, allowed: tuple[str, ...], where: str
) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise ConversionError(source, _line(node), f"{where or 'the file'}: expected a mapping")
    fields: dict[str, yaml.Node] = {}
    for key, value in node.value:
        if key.value not in allowed:
            at = f"{where}.{key.value}" if where else key.value
            raise ConversionError(
                source,
                _line(key),
                f'{at}: "{key.value}" is not supported '
                f"(krt converts only {', '.join(allowed)} here)",
            )
        fields[key.value] = value
    return fields


def _scalar(node: yaml.Node, source: str, where: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise ConversionError(source, _line(node), f"{where}: expected a single value")
    return NEEDS_REF.sub(r"\1jobs.", str(node.value))


def _string_map(node: yaml.Node, source: str, where: str) -> dict[str, str]:
    if not isinstance(node, yaml.MappingNode):
        raise ConversionError(source, _line(node), f"{where}: expected a mapping")
    return {k.value: _scalar(v, source, f"{where}.{k.value}") for k, v in node.value}


def _line(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1


def slug(text: str) -> str:
    """A label value (and DNS label) from free text: ``Run tests!`` → ``run-tests``."""
    value = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return value[:NAME_LIMIT].rstrip("-")


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"-{n}"
        candidate, n = name[: NAME_LIMIT - len(suffix)] + suffix, n + 1
    taken.add(candidate)
    return candidate
