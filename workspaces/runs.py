"""What the workspaces app adds to the Run kind: its use of a workspace is tracked (a Run
starting or ending wakes the workspace controller)."""

from __future__ import annotations

from portal.machinery.registry import registry


def register_run_hooks() -> None:
    from scheduling.models import Run

    from .triggers import on_run_change

    kind = registry.for_model(Run)
    if on_run_change not in kind.on_change:
        kind.on_change = (*kind.on_change, on_run_change)
