"""Final reports runtimed owes the control plane, kept until the control plane confirms them.

A final report is written here (on the pod's disk) before it is first sent; every heartbeat
repeats the oldest unconfirmed ones, and ``runtimed.confirm_reports`` removes those the
control plane has recorded. So a report survives a broker outage, a lost message and a
runtimed restart on the same disk; a pod that is gone for good is read from its disk by a
provider that can reach it (see ``scheduling.recovery``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from .protocol import Report, ReportKey, report_key

log = logging.getLogger("runtimed.outbox")

PER_HEARTBEAT = 32  # reports one heartbeat carries, oldest first
LIMIT = 4096  # unconfirmed reports kept; past it the oldest are dropped (and logged)
Key = ReportKey


class Outbox:
    """Unconfirmed final reports by (uid, attempt), in the order they ended; ``directory``
    None keeps them in memory only (tests)."""

    def __init__(self, directory: Path | None = None, *, limit: int = LIMIT) -> None:
        self.directory = directory
        self.limit = limit
        self._lock = threading.Lock()
        self._reports: OrderedDict[Key, Report] = OrderedDict()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self._load()

    def put(self, report: Report) -> None:
        key = report_key(report)
        if key is None:
            return
        with self._lock:
            self._reports[key] = report
            self._reports.move_to_end(key)
            self._write(key, report)
            while len(self._reports) > self.limit:
                dropped, _ = self._reports.popitem(last=False)
                log.error(
                    "outbox full: dropping the unconfirmed report of Run %s attempt %s", *dropped
                )
                self._unlink(dropped)

    def pending(self, limit: int = PER_HEARTBEAT) -> list[Report]:
        with self._lock:
            return [report for _, report in zip(range(limit), self._reports.values(), strict=False)]

    def confirm(self, keys: Iterable[Key]) -> int:
        removed = 0
        with self._lock:
            for key in keys:
                if self._reports.pop(key, None) is not None:
                    self._unlink(key)
                    removed += 1
        return removed

    def __len__(self) -> int:
        with self._lock:
            return len(self._reports)

    # --- disk ------------------------------------------------------------------------------

    def _path(self, key: Key) -> Path:
        assert self.directory is not None
        return self.directory / f"{key[0]}.{key[1]}.json"

    def _write(self, key: Key, report: Report) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        partial = path.with_name(path.name + ".partial")
        try:
            with open(partial, "w", encoding="utf-8") as handle:
                json.dump(report, handle, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, path)
        except OSError as exc:  # the report is still sent and kept in memory
            log.error("cannot keep the report of Run %s attempt %s on disk: %s", *key, exc)

    def _unlink(self, key: Key) -> None:
        if self.directory is not None:
            try:
                self._path(key).unlink(missing_ok=True)
            except OSError as exc:
                log.warning("cannot remove %s: %s", self._path(key), exc)

    def _load(self) -> None:
        assert self.directory is not None
        entries = []
        for path in self.directory.glob("*.json"):
            try:
                report = json.loads(path.read_text(encoding="utf-8"))
                entries.append((path.stat().st_mtime_ns, report))
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable outbox entry %s: %s", path, exc)
        for _, report in sorted(entries, key=lambda entry: entry[0]):
            key = report_key(report) if isinstance(report, dict) else None
            if key is not None:
                self._reports[key] = report
        if self._reports:
            log.info(
                "outbox: %d unconfirmed report(s) from before; sending them again",
                len(self._reports),
            )
