"""The result an execution reports (``result.json``), and what ``observe`` returns.

The supervisor rewrites ``result.json`` after every step; phases and step statuses are fixed
sets, times are RFC 3339 UTC with second precision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# execution phases
PENDING = "Pending"  # claimed; the supervisor has written nothing yet
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
CANCELLED = "Cancelled"
TIMED_OUT = "TimedOut"
UNKNOWN = "Unknown"  # no final result and no live supervisor: never re-run it
FINAL_PHASES = frozenset({SUCCEEDED, FAILED, CANCELLED, TIMED_OUT})

# step statuses (PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED as above)
SKIPPED = "Skipped"


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> str:
    return rfc3339(datetime.now(UTC))


def new_step(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "status": PENDING,
        "exitCode": None,
        "startedAt": None,
        "finishedAt": None,
    }


def parse(text: str | None) -> dict[str, Any] | None:
    """The recorded result, or None when there is none (or it cannot be read)."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("phase"), str) else None


@dataclass(frozen=True)
class Observation:
    phase: str
    message: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    start_time: str | None = None
    completion_time: str | None = None
    finished: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "finished", self.phase in FINAL_PHASES)

    @classmethod
    def from_result(
        cls, data: dict[str, Any], *, phase: str = "", message: str = ""
    ) -> Observation:
        return cls(
            phase=phase or data["phase"],
            message=message or str(data.get("message") or ""),
            steps=[dict(step) for step in data.get("steps") or []],
            start_time=data.get("startTime"),
            completion_time=data.get("completionTime"),
        )
