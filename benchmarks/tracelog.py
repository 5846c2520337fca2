"""Where the time of ``bench runs`` goes, read back from the children's Celery logs.

Every worker logs ``Task <name>[<id>] received`` and ``Task <name>[<id>] succeeded in <s>s``
with millisecond timestamps. For the measured window this gives, per process and task name:
how many ran, how long each ran (the task body), how long it sat in the worker between being
received and finishing, and the fraction of the window the process spent running tasks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .measure import percentile

LINE = re.compile(
    r"^\[?(?P<at>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3})[^\]]*?\]?\s.*?"
    r"Task (?P<task>[\w.]+)\[(?P<id>[0-9a-f-]+)\] "
    r"(?:(?P<received>received)|succeeded in (?P<runtime>[0-9.e-]+)s|(?P<failed>raised))"
)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text.replace("T", " ").replace(".", ","), "%Y-%m-%d %H:%M:%S,%f")


@dataclass
class TaskStats:
    runtimes_ms: list[float] = field(default_factory=list)
    in_worker_ms: list[float] = field(default_factory=list)  # received -> succeeded
    failed: int = 0

    @property
    def busy_seconds(self) -> float:
        return sum(self.runtimes_ms) / 1000


def task_stats(lines: Iterable[str], start: datetime, end: datetime) -> dict[str, TaskStats]:
    """Tasks that finished inside [start, end] (naive local times, as the logs write them)."""
    received: dict[str, datetime] = {}
    stats: dict[str, TaskStats] = {}
    for line in lines:
        match = LINE.search(line)
        if match is None:
            continue
        at = parse_time(match["at"])
        if match["received"]:
            received[match["id"]] = at
            continue
        if not start <= at <= end:
            continue
        entry = stats.setdefault(match["task"], TaskStats())
        if match["failed"]:
            entry.failed += 1
            continue
        entry.runtimes_ms.append(float(match["runtime"]) * 1000)
        got = received.pop(match["id"], None)
        if got is not None:
            entry.in_worker_ms.append((at - got).total_seconds() * 1000)
    return stats


def describe(process: str, stats: dict[str, TaskStats], window_seconds: float) -> list[str]:
    lines = []
    busy = sum(s.busy_seconds for s in stats.values())
    if stats:
        share = busy / window_seconds if window_seconds > 0 else 0.0
        lines.append(
            f"  {process}: busy {busy:.2f} s of {window_seconds:.2f} s "
            f"({share:.2f} process-equivalents)"
        )
    for name, entry in sorted(stats.items(), key=lambda item: -item[1].busy_seconds):
        run, held = entry.runtimes_ms, entry.in_worker_ms
        text = (
            f"    {name}: {len(run)} ran, body p50 {percentile(run, 0.5):.1f} "
            f"p90 {percentile(run, 0.9):.1f} ms"
        )
        if held:
            text += f"; received->done p50 {percentile(held, 0.5):.1f} ms"
        if entry.failed:
            text += f"; {entry.failed} FAILED"
        lines.append(text)
    return lines


RECONCILED = re.compile(
    r"^\[?(?P<at>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3}).*?"
    r"work queue (?P<queue>[\w.-]+): reconciled (?P<n>\d+), failed (?P<failed>\d+)"
)


def reconciles(lines: Iterable[str], start: datetime, end: datetime) -> dict[str, int]:
    """Keys each work queue reconciled in [start, end] (``portal.tasks.process_queue`` logs
    them), failed ones included: what the controllers did, however many tasks woke them."""
    counts: dict[str, int] = {}
    for line in lines:
        match = RECONCILED.search(line)
        if match is not None and start <= parse_time(match["at"]) <= end:
            queue = match["queue"]
            counts[queue] = counts.get(queue, 0) + int(match["n"]) + int(match["failed"])
    return counts


def log_reconciles(logs: dict[str, Path], start: datetime, end: datetime) -> dict[str, int]:
    """``reconciles`` over every child's log."""
    total: dict[str, int] = {}
    for path in logs.values():
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for queue, n in reconciles(text, start, end).items():
            total[queue] = total.get(queue, 0) + n
    return total


def breakdown(logs: dict[str, Path], start: datetime, end: datetime) -> list[str]:
    """The stderr lines describing each child's tasks in the window."""
    window = (end - start).total_seconds()
    lines = []
    for process, path in sorted(logs.items()):
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        lines.extend(describe(process, task_stats(text, start, end), window))
    return lines
