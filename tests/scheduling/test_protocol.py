"""The wire protocol has one definition: both sides register and send the names in
``runtimed.protocol``, and no other source file spells them out."""

from __future__ import annotations

import re
from pathlib import Path

from runtimed import protocol

ROOT = Path(__file__).resolve().parents[2]
NAMES = [
    protocol.EXECUTE_RUN_TASK,
    protocol.CANCEL_RUN_TASK,
    protocol.CONFIRM_REPORTS_TASK,
    protocol.REPORT_RUN_TASK,
    protocol.HEARTBEAT_TASK,
    protocol.APPEND_LOG_TASK,
]


def test_the_control_plane_registers_every_task_runtimed_sends():
    import scheduling.tasks  # noqa: F401 - registers the control tasks
    from portal.celery import app

    assert {protocol.REPORT_RUN_TASK, protocol.HEARTBEAT_TASK, protocol.APPEND_LOG_TASK} <= set(
        app.tasks
    )


def test_no_source_file_but_the_protocol_spells_a_task_name():
    quoted = re.compile("|".join(re.escape(f'"{name}"') for name in NAMES))
    offenders = []
    for package in ("portal", "scheduling", "runtimed", "workspaces", "workflows", "jobclasses"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "runtimed" / "protocol.py":
                continue
            if quoted.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
