"""runtimed without a control plane: a ticking clock, a reporter that records, a Run payload."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class TickingClock:
    """A clock for tests: starts at a fixed instant and moves one second per reading."""

    def __init__(self, start: datetime = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        current = self.now
        self.now += timedelta(seconds=1)
        return current


class FakeReporter:
    """Collects what runtimed would send to the control plane."""

    def __init__(self) -> None:
        self.reports: list[dict] = []
        self.heartbeats: list[dict] = []
        self.sent: list[tuple[str, dict]] = []  # other tasks by name (log chunks)

    def send(self, name: str, kwargs: dict, *, retries: int | None = None) -> bool:
        self.sent.append((name, kwargs))
        return True

    def log_text(self) -> str:
        """The output as the control plane gets it: chunks, and the tails on final reports."""
        chunks = [kw["chunk"] for name, kw in self.sent if name == "scheduling.append_log"]
        chunks += [report["log"] for report in self.reports if "log" in report]
        chunks.sort(key=lambda c: (c["attempt"], c["offset"]))
        return "".join(c["text"] for c in chunks)

    def report_run(self, report: dict) -> bool:
        self.reports.append(report)
        return True

    def heartbeat(self, heartbeat: dict) -> bool:
        self.heartbeats.append(heartbeat)
        return True


def make_payload(
    script: str = "exit 0",
    *,
    uid: str = "run-uid-1",
    attempt: int = 1,
    pod: tuple[str, str] = ("pod-a", "uid-pod-a"),
    **extra,
) -> dict:
    payload = {
        "run": {"namespace": "ci", "name": "build", "uid": uid, "attempt": attempt},
        "pod": {"name": pod[0], "uid": pod[1]},
        "source": {"inline": script},
        "mode": {"task": {"args": []}},
        "env": [],
        "timeoutSeconds": None,
        "workingDir": None,
    }
    payload.update(extra)
    return payload
