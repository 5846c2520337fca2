"""Printer columns as text: the one rendering of a kind's ``Column``s that ``manage.py get``
and the API's ``meta.k8s.io`` Table share (NAME first, AGE after the narrow columns, the wide
ones last, as kube-apiserver orders a Pod's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from .humanize import human_duration
from .registry import Column, ResourceKind

NONE = "<none>"


def cell_text(value: Any) -> str:
    """A cell as kubectl prints it: ``<none>`` for nothing, booleans lower-case, lists joined."""
    if value is None or value == "":
        return NONE
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(map(str, value)) or NONE
    return str(value)


def age_text(timestamp: datetime | None, now: datetime | None = None) -> str:
    if timestamp is None:
        return "<unknown>"
    return human_duration(((now or timezone.now()) - timestamp).total_seconds())


def created_at(kind: ResourceKind, obj: Any) -> datetime | None:
    value = getattr(obj, kind.created_attr, None)
    return value if isinstance(value, datetime) else None


def printed_columns(kind: ResourceKind, wide: bool = True) -> tuple[list[Column], list[Column]]:
    """(narrow, wide) columns: the narrow ones go before AGE, the wide ones after it."""
    narrow = [c for c in kind.columns if not c.wide]
    extra = [c for c in kind.columns if c.wide] if wide else []
    return narrow, extra


def column_cells(
    kind: ResourceKind, obj: Any, now: datetime, *, wide: bool = True
) -> tuple[list[str], str, list[str]]:
    """(narrow cells, the AGE cell, wide cells) of one object."""
    narrow, extra = printed_columns(kind, wide)
    return (
        [cell_text(c.value(obj)) for c in narrow],
        age_text(created_at(kind, obj), now),
        [cell_text(c.value(obj)) for c in extra],
    )
