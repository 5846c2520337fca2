"""What the workspaces app adds to the Run and RuntimePod kinds: its use of a workspace is
tracked (a Run starting or ending wakes the workspace controller, as does any recorded change
of a Runtime Pod, which a workspace may be bound to), and a Run may reference only a workspace
that exists, matches its Runtime and that its writer may use (``review``)."""

from __future__ import annotations

from portal.machinery.registry import registry


def register_run_hooks() -> None:
    from scheduling.models import Run, Runtime, RuntimePod

    from .ownership import register_workflow_controller
    from .review import check_run_workspace
    from .triggers import on_pod_change, on_run_change, on_runtime_change

    registry.watch(Run, on_run_change)
    registry.watch(RuntimePod, on_pod_change)
    registry.watch(Runtime, on_runtime_change)
    kind = registry.for_model(Run)
    if check_run_workspace not in kind.admission:
        kind.admission = (*kind.admission, check_run_workspace)
    register_workflow_controller()
