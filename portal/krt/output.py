"""Printing objects as kubectl does: the server's Table (its printer columns), ``-o
json|yaml|name|wide``; colour only on a terminal (and never with ``NO_COLOR``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

FORMATS = ("json", "yaml", "name", "wide")
GREEN, RED, YELLOW, BLUE, RESET = "\033[32m", "\033[31m", "\033[33m", "\033[34m", "\033[0m"
PHASE_COLOURS = {
    "Succeeded": GREEN,
    "Ready": GREEN,
    "Bound": GREEN,
    "Failed": RED,
    "Timeout": RED,
    "Lost": RED,
    "Cancelled": YELLOW,
    "Skipped": YELLOW,
    "Running": BLUE,
}


def colour_enabled(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def phase_text(phase: str, stream: TextIO = sys.stdout) -> str:
    colour = PHASE_COLOURS.get(phase)
    return f"{colour}{phase}{RESET}" if colour and colour_enabled(stream) else phase


def format_rows(rows: Sequence[Sequence[str]], stream: TextIO = sys.stdout) -> str:
    """Columns padded to their widest cell, three spaces apart (kubectl's tabwriter); a
    PHASE/STATUS column coloured on a terminal."""
    if not rows:
        return ""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    header = [str(cell).upper() for cell in rows[0]]
    coloured = {i for i, name in enumerate(header) if name in ("PHASE", "STATUS")}
    lines = []
    for n, row in enumerate(rows):
        cells = []
        for i, cell in enumerate(row):
            text = str(cell)
            pad = " " * (widths[i] - len(text))
            if n and i in coloured:
                text = phase_text(text, stream)
            cells.append(text + pad if i < len(row) - 1 else text)
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def table_rows(table: dict[str, Any], *, wide: bool, namespace_column: bool) -> list[list[str]]:
    """The header and rows of a meta.k8s.io Table: priority-0 columns, all with ``wide``."""
    columns = table.get("columnDefinitions") or []
    shown = [i for i, c in enumerate(columns) if wide or not c.get("priority")]
    header = [str(columns[i].get("name", "")).upper() for i in shown]
    rows: list[list[str]] = []
    if namespace_column:
        header.insert(0, "NAMESPACE")
    for row in table.get("rows") or []:
        cells = row.get("cells") or []
        values = [_cell(cells[i]) if i < len(cells) else "" for i in shown]
        if namespace_column:
            meta = (row.get("object") or {}).get("metadata") or {}
            values.insert(0, str(meta.get("namespace") or ""))
        rows.append(values)
    return [header, *rows] if rows else []


def _cell(value: Any) -> str:
    if value is None:
        return "<none>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=4, ensure_ascii=False)
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def names(objects: Iterable[dict[str, Any]], qualified: str) -> str:
    return "\n".join(f"{qualified}/{(o.get('metadata') or {}).get('name', '')}" for o in objects)


def print_line(text: str, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    if text:
        stream.write(text + "\n")
        stream.flush()


def progress(text: str) -> None:
    """A line about a long wait: on stderr, so stdout stays the command's output."""
    print_line(text, sys.stderr)
