"""What the commands print: kubectl's tables (AGE included), YAML/JSON/name output, error lines."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import CommandError
from django.utils import timezone

from portal.machinery import humanize, printing
from portal.machinery.errors import StatusError
from portal.machinery.manifest import list_item, to_manifest
from portal.machinery.registry import ResourceKind
from portal.machinery.yaml import dump

from .errors import CLIError, status_lines

# kubectl's tabwriter: minwidth 6, padding 3.
TABLE_PADDING = 3
TABLE_MIN_WIDTH = 6
OUTPUT_FORMATS = ("yaml", "json", "wide", "name")


def error_lines(exc: Exception) -> list[str]:
    if isinstance(exc, CLIError):
        return exc.lines
    if isinstance(exc, StatusError):
        return status_lines(exc)
    return [f"error: {exc}"]


def report(stream: Any, exc: Exception) -> None:
    """Write an error's lines to a command's stderr."""
    for line in error_lines(exc):
        stream.write(line)


def abort(stream: Any, exc: Exception, summary: str) -> CommandError:
    """Report the error, and the CommandError (exit status 1) the command raises."""
    report(stream, exc)
    return CommandError(summary, returncode=1)


def human_duration(delta: timedelta) -> str:
    return humanize.human_duration(delta.total_seconds())


age = printing.age_text
cell = printing.cell_text


def format_table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell plus 3 spaces (kubectl's tabwriter); the last
    column is not padded."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        padded = [
            text.ljust(max(widths[i] + TABLE_PADDING, TABLE_MIN_WIDTH))
            for i, text in enumerate(row[:-1])
        ]
        lines.append("".join(padded) + row[-1])
    return "\n".join(lines)


def table_rows(
    kind: ResourceKind,
    objects: list[Any],
    *,
    all_namespaces: bool = False,
    wide: bool = False,
    qualify: bool = False,
    now: datetime | None = None,
) -> list[list[str]]:
    """Header and rows: [NAMESPACE] NAME <columns> AGE [<wide columns>]."""
    now = now or timezone.now()
    narrow, extra = printing.printed_columns(kind, wide)
    show_ns = all_namespaces and kind.namespaced
    rows = [
        (["NAMESPACE"] if show_ns else [])
        + ["NAME"]
        + [c.header for c in narrow]
        + ["AGE"]
        + [c.header for c in extra]
    ]
    for obj in objects:
        name = f"{kind.key}/{obj.name}" if qualify else obj.name
        cells, age_cell, wide_cells = printing.column_cells(kind, obj, now, wide=wide)
        rows.append(([obj.namespace] if show_ns else []) + [name] + cells + [age_cell] + wide_cells)
    return rows


def as_list(manifests: list[dict]) -> dict:
    return {
        "apiVersion": "v1",
        "items": manifests,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


def render(
    found: list[tuple[ResourceKind, list[Any]]],
    output: str | None,
    *,
    singular: bool = False,
    all_namespaces: bool = False,
    listing: bool = False,
) -> str:
    """``get``'s stdout for the objects found, per kind: a table, YAML, JSON or names (a
    listing shows its items as the API's list does)."""
    if output in ("yaml", "json"):
        shown = list_item if listing else to_manifest
        manifests = [shown(kind, obj) for kind, objects in found for obj in objects]
        if singular and not manifests:
            return ""
        data = manifests[0] if singular and len(manifests) == 1 else as_list(manifests)
        return dump(data) if output == "yaml" else json.dumps(data, indent=4) + "\n"
    if output == "name":
        return "".join(f"{kind.key}/{obj.name}\n" for kind, objects in found for obj in objects)
    now = timezone.now()
    qualify = len(found) > 1
    tables = [
        format_table(
            table_rows(
                kind,
                objects,
                all_namespaces=all_namespaces,
                wide=output == "wide",
                qualify=qualify,
                now=now,
            )
        )
        for kind, objects in found
        if objects
    ]
    return "\n\n".join(tables) + "\n" if tables else ""


def no_resources_message(
    kinds: list[ResourceKind], namespace: str | None, all_namespaces: bool
) -> str:
    if all_namespaces or not any(kind.namespaced for kind in kinds):
        return "No resources found"
    return f"No resources found in {namespace or 'default'} namespace."
