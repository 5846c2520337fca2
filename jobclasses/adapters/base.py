"""The interface every execution adapter implements (seed 003): a readiness check for its
classes, and ``ensure / observe / cancel / delete`` over a persisted ``executionRef``.

The Job controller persists the reference an adapter ``plan``s before it asks the adapter to
``ensure`` the execution, so a controller restarted at any point finds the execution it
started instead of starting another. Every call after ``plan`` works from the reference alone:
the class and its parameters may have changed or gone since (parameter edits never create a
new execution for an existing Job).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Readiness:
    """The class's Ready condition: True/False, a stable reason and a message."""

    ready: bool
    reason: str
    message: str


@dataclass(frozen=True)
class Observation:
    """What an execution is doing. ``phase``: Pending, Running, Succeeded, Failed, Cancelled,
    TimedOut, or Unknown (it cannot be observed safely: a non-terminal ResultUnknown)."""

    phase: str
    message: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    start_time: str | None = None
    completion_time: str | None = None
    # False: the execution never existed under this reference (ensure has not run yet)
    exists: bool = True
    # True: the execution lives in the backend but nothing drives it; ``resume`` goes on
    detached: bool = False

    @classmethod
    def of(cls, seen: Any, *, exists: bool = True) -> Observation:
        """An engine's own observation (its phase, message, steps and times) as the
        adapters' answer."""
        return cls(
            phase=seen.phase,
            message=seen.message,
            steps=list(seen.steps),
            start_time=seen.start_time,
            completion_time=seen.completion_time,
            exists=exists,
        )


class NotReadyToStart(Exception):  # noqa: N818 - a condition, not a failure
    """The execution cannot be created yet (capacity, a missing ServiceAccount): the Job stays
    Scheduled=False with this reason and is tried again."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class BackendError(Exception):
    """The backend could not be reached or answered nonsense: nothing is known either way."""


@dataclass(frozen=True)
class ExecutionRequest:
    """What an adapter needs to create a Job's execution (resolved by the Job controller)."""

    namespace: str
    name: str
    uid: str
    spec: Mapping[str, Any]  # the Job's spec
    parameters: Mapping[str, Any]  # the parameters object's spec
    parameters_name: str
    env: Mapping[str, str]  # resolved: Secret values included (never persisted)
    effective_resources: Mapping[str, Any]
    # the values taken from Secrets: masked (***) in the log and outputs
    masked: tuple[str, ...] = ()


class Adapter(Protocol):
    controller_name: str
    parameter_kinds: tuple[str, ...]  # kinds of execution.ayatori.ddupan.top it accepts

    def readiness(self, parameters_name: str, parameters: Mapping[str, Any]) -> Readiness: ...

    def plan(self, request: ExecutionRequest) -> dict[str, Any]:
        """The reference of the request's execution (no side effect); may raise
        NotReadyToStart."""
        ...

    def ensure(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        """Create the execution unless it exists (idempotent)."""
        ...

    def observe(self, ref: Mapping[str, Any]) -> Observation: ...

    def resume(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        """Drive a ``detached`` execution again from what the backend recorded, never
        creating a second one (adapters that never report ``detached`` do nothing)."""
        ...

    def cancel(self, ref: Mapping[str, Any]) -> None: ...

    def delete(self, ref: Mapping[str, Any]) -> None: ...

    def log(self, ref: Mapping[str, Any], limit_bytes: int | None = None) -> str: ...
