"""Transition rules: ``(new, old|None) -> causes``.

A JobClass's ``controllerName`` and ``parametersRef`` are fixed at creation (a new backend is
a new class name); its allowedNamespaces and resource policy stay mutable and affect only Jobs
not yet accepted. A Job's spec is fixed once created, except that ``cancelRequested`` may be
set, and once set cannot be taken back.
"""

from __future__ import annotations

from portal.machinery import errors
from portal.machinery.errors import FieldError

CLASS_IMMUTABLE = ("controllerName", "parametersRef")


def class_spec_immutable(new: dict, old: dict | None) -> list[FieldError]:
    if old is None:
        return []
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    return [
        errors.invalid(
            f"spec.{name}", "field is immutable: create a new JobClass to use another backend"
        )
        for name in CLASS_IMMUTABLE
        if new_spec.get(name) != old_spec.get(name)
    ]


def job_spec_immutable(new: dict, old: dict | None) -> list[FieldError]:
    if old is None:
        return []
    new_spec, old_spec = dict(new.get("spec") or {}), dict(old.get("spec") or {})
    causes = []
    if old_spec.get("cancelRequested") and not new_spec.get("cancelRequested"):
        causes.append(errors.invalid("spec.cancelRequested", "cannot be unset once true"))
    new_spec.pop("cancelRequested", None)
    old_spec.pop("cancelRequested", None)
    for name in sorted(set(new_spec) | set(old_spec)):
        if new_spec.get(name) != old_spec.get(name):
            causes.append(
                errors.invalid(
                    f"spec.{name}", "field is immutable: only cancelRequested may change"
                )
            )
    return causes


JOB_CLASS_VALIDATORS = (class_spec_immutable,)
JOB_VALIDATORS = (job_spec_immutable,)
