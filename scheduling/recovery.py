"""Reading a gone Runtime Pod's disk for the final reports it recorded.

runtimed records every final report on the pod's disk before it sends it (the Run's
``attempt-<n>.result.json``, and its outbox). A Run's directory is under the pod's workspace,
or under the PersistentWorkspace it ran in (``<workspace>/persistent/<name>``): both are read. A provider that can still reach that disk
(the local provider always can) applies them before it fails the pod's Runs as lost, so an
attempt that finished while its report was in flight is never failed, nor run again.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from django.utils import timezone

from runtimed.protocol import OUTBOX_DIR, RUNS_DIR, run_roots
from scheduling import lifecycle, metrics

log = logging.getLogger(__name__)
MAX_REPORTS = 10_000  # what one pod's disk is read for at most


def recorded_reports(workspace: Path) -> list[dict]:
    """The final reports under a pod's workspace and its persistent workspaces, each
    (uid, attempt) once."""
    found: dict[tuple, dict] = {}
    paths = [
        path
        for root in run_roots(workspace)
        for path in sorted((root / RUNS_DIR).glob("*/attempt-*.result.json"))
    ]
    paths += sorted((workspace / OUTBOX_DIR).glob("*.json"))
    for path in paths[:MAX_REPORTS]:
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable recorded report %s: %s", path, exc)
            continue
        if isinstance(report, dict) and report.get("uid"):
            found.setdefault((report.get("uid"), report.get("attempt")), report)
    return list(found.values())


def recover(workspace: Path | str | None) -> int:
    """Apply what a gone pod recorded; returns how many Runs it ended."""
    if not workspace:
        return 0
    applied = 0
    for report in recorded_reports(Path(workspace)):
        if lifecycle.apply_report(report, timezone.now()):
            applied += 1
    if applied:
        metrics.RECOVERED_REPORTS.inc(applied)
        log.warning(
            "applied %d final report(s) read from the disk of a gone Runtime Pod (%s)",
            applied,
            workspace,
        )
    return applied
