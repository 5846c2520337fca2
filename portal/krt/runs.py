"""Runs from the laptop: create, follow the log until the Run ends, cancel; the step's exit
status becomes krt's own.

Exit codes of ``krt run --wait`` (and ``krt logs -f`` never changes them): the step's
``status.exitCode``; 1 when the Run failed without one (e.g. PrepareSource); 124 when it hit
its ``timeout`` (as timeout(1)); 130 when it was cancelled."""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

from .connection import Connection, stream_chunks
from .output import phase_text, progress
from .resources import RUNS
from .watching import wait_for

TERMINAL = ("Succeeded", "Failed", "Timeout", "Cancelled")
EXIT_TIMEOUT = 124
EXIT_CANCELLED = 130
TEXT = "text/plain, */*"


def phase(run: dict[str, Any]) -> str:
    return str((run.get("status") or {}).get("phase") or "Pending")


def attempt(run: dict[str, Any]) -> int:
    return int((run.get("status") or {}).get("attempt") or 0)


def exit_code(run: dict[str, Any]) -> int:
    status = run.get("status") or {}
    ended = phase(run)
    if ended == "Timeout":
        return EXIT_TIMEOUT
    if ended == "Cancelled":
        return EXIT_CANCELLED
    if ended == "Succeeded":
        return 0
    code = status.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) and code > 0 else 1


def create(conn: Connection, body: dict[str, Any]) -> dict[str, Any]:
    namespace = body["metadata"].get("namespace") or conn.namespace
    return conn.json("POST", RUNS.path(namespace), body=body)


def cancel(conn: Connection, namespace: str, name: str) -> dict[str, Any]:
    return conn.json(
        "PATCH",
        RUNS.path(namespace, name),
        body={"spec": {"cancelRequested": True}},
        content_type="application/merge-patch+json",
    )


def stream_log(
    conn: Connection,
    namespace: str,
    name: str,
    *,
    follow: bool,
    attempt_number: int | None = None,
    out: BinaryIO | None = None,
) -> None:
    """Copy the log (``?follow=true``: until the attempt is over and quiet) to ``out``."""
    out = out or sys.stdout.buffer
    query: dict[str, Any] = {"follow": follow, "attempt": attempt_number}
    timeout: float | tuple[float, float | None] = (30.0, None) if follow else 60.0
    response = conn.request(
        "GET", RUNS.path(namespace, name, "log"), query=query, accept=TEXT, timeout=timeout
    )
    for chunk in stream_chunks(response):
        out.write(chunk)
        out.flush()


def follow(
    conn: Connection,
    namespace: str,
    name: str,
    out: BinaryIO | None = None,
    *,
    report_end: bool = True,
) -> dict[str, Any]:
    """Stream each attempt's log while the Run runs; returns the Run once it ended.
    While it waits for a Runtime Pod, its phase and message go to stderr (and, with
    ``report_end``, the phase it ended in)."""
    shown: list[tuple[str, str]] = []

    def report(run: dict[str, Any]) -> None:
        now = (phase(run), str((run.get("status") or {}).get("message") or ""))
        if not report_end and now[0] not in ("Pending", "Scheduled"):
            return
        if not shown or shown[-1] != now:
            shown.append(now)
            progress(
                f"run/{name}: {phase_text(now[0], sys.stderr)}" + (f": {now[1]}" if now[1] else "")
            )

    def started(run: dict[str, Any]) -> bool:
        return phase(run) not in ("Pending", "Scheduled") or attempt(run) > 0

    run, _ = wait_for(conn, RUNS, namespace, name, started, on_change=report)
    streamed: set[int] = set()
    while True:
        current = attempt(run)
        if current not in streamed:
            streamed.add(current)
            if current > 1:
                progress(f"run/{name}: attempt {current}")
            stream_log(
                conn,
                namespace,
                name,
                follow=phase(run) not in TERMINAL,
                attempt_number=current or None,
                out=out,
            )
        if phase(run) in TERMINAL and current in streamed:
            run = conn.json("GET", RUNS.path(namespace, name))
            if phase(run) in TERMINAL and attempt(run) == current:
                report(run)
                return run
            continue

        def moved(obj: dict[str, Any], seen: int = current) -> bool:
            return phase(obj) in TERMINAL or attempt(obj) != seen

        run, _ = wait_for(conn, RUNS, namespace, name, moved)
