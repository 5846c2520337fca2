"""A Runtime Pod as the scheduler sees it: readiness, capacity and what its Runs use."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class PodState:
    namespace: str
    runtime: str
    name: str
    uid: str
    pk: int
    ready: bool
    phase: str
    last_heartbeat: datetime | None
    capacity: dict[str, int]
    used: dict[str, int] = field(default_factory=dict)  # actual + assumed requests

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name
