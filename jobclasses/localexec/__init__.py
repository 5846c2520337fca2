"""The engine of the local execution adapter: run a Job's steps on this machine.

An execution is a detached supervisor process plus a directory holding all its state; the
Job controller keeps only the JSON-able ``executionRef`` that :func:`start` returns, and may
restart at any moment: :func:`observe`, :func:`cancel` and :func:`delete` need nothing else.
A plain package: it imports no Django and no app (import-linter holds this line).
"""

from .client import cancel, delete, launch, observe, read_log, running_count, start
from .result import Observation
from .spec import ExecutionSpec, Step

__all__ = [
    "ExecutionSpec",
    "Observation",
    "Step",
    "cancel",
    "delete",
    "launch",
    "observe",
    "read_log",
    "running_count",
    "start",
]
