"""``${{ <ref> }}`` expressions (API.md): the only refs are ``inputs.<name>``,
``steps.<name>.outputs.<key>`` and ``jobs.<name>.outputs.<key>``; anything else is invalid.

``check`` is admission: which refs a field may use depends on where it is (a step may read
inputs, earlier steps of its job and the outputs of the jobs it needs). ``resolve`` is the
controller's: it substitutes values, and raises ``Unresolved`` for a ref whose value does not
exist (the step then fails, and no child Run is created for it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import dataclass

from portal.machinery import errors
from portal.machinery.errors import FieldError

EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"
_KEY = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_INPUT = re.compile(rf"inputs\.({_NAME})")
_OUTPUT = re.compile(rf"(steps|jobs)\.({_NAME})\.outputs\.({_KEY})")
ALLOWED = "inputs.<name>, steps.<name>.outputs.<key> or jobs.<name>.outputs.<key>"


class ExpressionError(ValueError):
    pass


class Unresolved(LookupError):
    """A ref with no value when the controller resolves it."""

    def __init__(self, ref: Ref) -> None:
        super().__init__(f"${{{{ {ref} }}}} has no value")
        self.ref = ref


@dataclass(frozen=True)
class Ref:
    scope: str  # "inputs" | "steps" | "jobs"
    name: str
    key: str = ""

    def __str__(self) -> str:
        return (
            f"inputs.{self.name}"
            if self.scope == "inputs"
            else (f"{self.scope}.{self.name}.outputs.{self.key}")
        )


def parse_ref(text: str) -> Ref:
    found = _INPUT.fullmatch(text)
    if found:
        return Ref("inputs", found.group(1))
    found = _OUTPUT.fullmatch(text)
    if found:
        # a step or job name is a label value: no dots; a dotted name reads as name.outputs...
        return Ref(found.group(1), found.group(2), found.group(3))
    raise ExpressionError(f"unsupported expression ${{{{ {text} }}}}: use {ALLOWED}")


def refs(text: str) -> list[Ref]:
    """Every ref in ``text``; ExpressionError for the first that is not one of the three."""
    return [parse_ref(match.group(1)) for match in EXPRESSION.finditer(text or "")]


@dataclass(frozen=True)
class Scope:
    """What an expression at some place may read."""

    inputs: Set[str] = frozenset()
    steps: Set[str] = frozenset()  # earlier steps of the same job (or a job's steps)
    jobs: Set[str] = frozenset()  # the jobs it needs (or every job, for workflow outputs)
    what_steps: str = "an earlier step of this job"
    what_jobs: str = "a job listed in needs"


def check(text: str, path: str, scope: Scope) -> list[FieldError]:
    """Admission of one string field: every ref well formed and in scope."""
    try:
        found = refs(text)
    except ExpressionError as exc:
        return [errors.invalid(path, f"Invalid value: {exc}")]
    causes = []
    for ref in found:
        if ref.scope == "inputs" and ref.name not in scope.inputs:
            causes.append(errors.invalid(path, f"Invalid value: ${{{{ {ref} }}}}: no such input"))
        elif ref.scope == "steps" and ref.name not in scope.steps:
            causes.append(
                errors.invalid(
                    path, f"Invalid value: ${{{{ {ref} }}}}: {ref.name} is not {scope.what_steps}"
                )
            )
        elif ref.scope == "jobs" and ref.name not in scope.jobs:
            causes.append(
                errors.invalid(
                    path, f"Invalid value: ${{{{ {ref} }}}}: {ref.name} is not {scope.what_jobs}"
                )
            )
    return causes


@dataclass(frozen=True)
class Values:
    inputs: Mapping[str, str]
    steps: Mapping[str, Mapping[str, str]]  # step name -> its outputs
    jobs: Mapping[str, Mapping[str, str]]  # job name -> its outputs


def value_of(ref: Ref, values: Values) -> str:
    if ref.scope == "inputs":
        if ref.name in values.inputs:
            return values.inputs[ref.name]
        raise Unresolved(ref)
    table = values.steps if ref.scope == "steps" else values.jobs
    outputs = table.get(ref.name)
    if outputs is None or ref.key not in outputs:
        raise Unresolved(ref)
    return outputs[ref.key]


def resolve(text: str, values: Values) -> str:
    """``text`` with each ``${{ ref }}`` replaced by its value; Unresolved for a missing one."""
    return EXPRESSION.sub(lambda match: value_of(parse_ref(match.group(1)), values), text)
