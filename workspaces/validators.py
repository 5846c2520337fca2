"""Transition rules of PersistentWorkspace: ``(new, old|None) -> causes``.

``spec.runtime`` and ``spec.mode`` are fixed once the workspace exists: its binding (and, for
RuntimePodLocal, its bytes) belong to one Runtime's pod. The TTL and the cleanup policy stay
mutable, so an operator can keep a workspace (Retain) or let it go.
"""

from __future__ import annotations

from portal.machinery import errors
from portal.machinery.errors import FieldError

IMMUTABLE_FIELDS = ("runtime", "mode")


def spec_immutable(new: dict, old: dict | None) -> list[FieldError]:
    if old is None:
        return []
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    return [
        errors.invalid(f"spec.{name}", "field is immutable")
        for name in IMMUTABLE_FIELDS
        if new_spec.get(name) != old_spec.get(name)
    ]


WORKSPACE_VALIDATORS = (spec_immutable,)
