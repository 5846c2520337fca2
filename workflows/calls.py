"""Workflow calls are finite (a job's ``uses: <Workflow>`` runs it as a child WorkflowRun).

- **Admission.** A Workflow that reaches itself through ``uses``, directly or through other
  Workflows of its namespace, is refused at the field of the call, with the shortest cycle
  named (``spec.jobs.a.uses: the call cycle h6 → h6``). It is looked for only when a write
  changes the Workflow's calls, so an object already stored stays editable.
- **Run time.** Admission cannot see everything (a Workflow changed or written past it, two
  writes racing), so the controller also counts levels: a WorkflowRun's callers are found by
  following controller ownerReferences to WorkflowRuns (what only the controller sets up),
  and a call that would nest more than ``MAX_CALL_DEPTH`` WorkflowRuns fails its job
  ``CallDepthExceeded``. GitHub Actions allows ten levels of workflows (the caller and nine
  reusable ones), and so does this.
- **Cancel.** A WorkflowRun whose caller at any level is cancelled counts as cancelled itself,
  so a cancel stops a chain at once instead of chasing its growing end one level per pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import ValidationError

from portal.machinery import errors
from portal.machinery.errors import FieldError

from .models import JobPhase, Workflow, WorkflowRun
from .names import API_VERSION

MAX_CALL_DEPTH = 10
CALL_DEPTH_EXCEEDED = "CallDepthExceeded"


# --- admission ----------------------------------------------------------------------------


def calls_of(spec: Any) -> dict[str, str]:
    """job -> the Workflow it calls."""
    jobs = spec.get("jobs") if isinstance(spec, dict) else None
    return {
        job: body["uses"]
        for job, body in (jobs if isinstance(jobs, dict) else {}).items()
        if isinstance(body, dict) and isinstance(body.get("uses"), str)
    }


def _called_by(namespace: str, names: Iterable[str]) -> dict[str, set[str]]:
    stored = Workflow.objects.filter(namespace=namespace, name__in=list(names))
    return {name: set(calls_of(spec).values()) for name, spec in stored.values_list("name", "spec")}


def chain_back(namespace: str, name: str, start: str) -> list[str] | None:
    """The shortest chain of Workflows ``start … name`` in which each calls the next (the
    stored ones; ``name``'s own calls are not followed), or None."""
    if start == name:
        return [name]
    came_from: dict[str, str | None] = {start: None}
    level = [start]
    while level:
        calls = _called_by(namespace, level)
        following: list[str] = []
        for caller in level:
            for called in sorted(calls.get(caller, ())):
                if called == name:
                    chain: list[str] = [name]
                    step: str | None = caller
                    while step is not None:
                        chain.insert(0, step)
                        step = came_from[step]
                    return chain
                if called not in came_from:
                    came_from[called] = caller
                    following.append(called)
        level = following
    return None


def call_cycle_causes(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """A Workflow kind validator: each call that leads back to this Workflow is a cause."""
    calls = calls_of(new.get("spec"))
    if not calls or (old is not None and calls == calls_of(old.get("spec"))):
        return []
    meta = new.get("metadata") or {}
    name, namespace = meta.get("name") or "", meta.get("namespace") or ""
    causes = []
    for job, called in sorted(calls.items()):
        chain = chain_back(namespace, name, called)
        if chain is not None:
            cycle = " → ".join([name, *chain])
            causes.append(
                errors.invalid(
                    f"spec.jobs.{job}.uses", f'Invalid value: "{called}": the call cycle {cycle}'
                )
            )
    return causes


# --- run time -------------------------------------------------------------------------------


def _caller_uid(wfr: WorkflowRun) -> str | None:
    for ref in wfr.owner_references or []:
        if (
            isinstance(ref, dict)
            and ref.get("controller") is True
            and ref.get("kind") == "WorkflowRun"
            and ref.get("apiVersion") == API_VERSION
        ):
            return str(ref.get("uid") or "") or None
    return None


def callers(wfr: WorkflowRun) -> list[WorkflowRun]:
    """The WorkflowRuns that called ``wfr``, nearest first (at most MAX_CALL_DEPTH of them;
    none, and no query, for one nobody called)."""
    found: list[WorkflowRun] = []
    seen = {str(wfr.uid)}
    uid = _caller_uid(wfr)
    while uid is not None and uid not in seen and len(found) < MAX_CALL_DEPTH:
        try:
            caller = (
                WorkflowRun.objects.filter(namespace=wfr.namespace, uid=uid)
                .only("uid", "owner_references", "cancel_requested")
                .first()
            )
        except ValidationError:  # not a UUID: no WorkflowRun has it
            caller = None
        if caller is None:
            break
        found.append(caller)
        seen.add(uid)
        uid = _caller_uid(caller)
    return found


def call_depth(wfr: WorkflowRun) -> int:
    """1 for a WorkflowRun nobody called, its caller's depth + 1 for a called one."""
    return len(callers(wfr)) + 1


def depth_exceeded(called: str, depth: int) -> dict:
    """The status of a job whose call would nest too deep."""
    return {
        "phase": JobPhase.FAILED,
        "reason": CALL_DEPTH_EXCEEDED,
        "message": f'Workflow "{called}" not called ({CALL_DEPTH_EXCEEDED}): WorkflowRuns call '
        f"each other at most {MAX_CALL_DEPTH} levels deep, and this one is level {depth}",
    }
