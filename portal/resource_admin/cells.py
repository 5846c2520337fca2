"""The change list's columns: name, namespace, printer columns, phase, conditions, labels, age."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from portal.machinery.registry import Column

from .render import (
    ConditionTone,
    age,
    badge,
    compact,
    condition_badges,
    default_condition_tone,
    label_chips,
    phase_tone,
    timestamp,
)

LIST_LABEL_CHIPS = 4
PHASE_HEADERS = {"PHASE", "STATUS"}


def _column_cell(column: Column) -> Callable[[Any], Any]:
    def cell(obj: Any) -> Any:
        try:
            value = column.value(obj)
        except Exception:  # a printer column must never take the list down
            return badge("?", "unknown", "this column could not be computed for this object")
        return compact(value) if isinstance(value, (dict, list, bool)) else value

    cell.short_description = column.header  # type: ignore[attr-defined]
    cell.__name__ = "column_" + "".join(c if c.isalnum() else "_" for c in column.header.lower())
    return cell


class ListCellsMixin:
    """``list_display`` derived from the kind; the phase badge replaces a PHASE/STATUS column,
    and ``replaced_columns`` (a printer column's cell name -> the admin's own cell, e.g. a
    linked one) replaces the columns an app shows better."""

    replaced_columns: dict[str, str] = {}

    def condition_tone_for(self, obj: Any) -> ConditionTone:
        """How ``obj``'s conditions are coloured: green True, red False, unless a kind's admin
        says what its conditions mean (a finished Run's ``Running=False`` is no failure)."""
        return default_condition_tone

    def get_list_display(self, request):
        kind = self.resource_kind
        cells: list[Any] = ["name_cell"]
        if kind.namespaced:
            cells.append("namespace_cell")
        phase_placed = False
        for column in kind.columns:
            if column.wide:
                continue
            if self.has_phase() and column.header.upper() in PHASE_HEADERS:
                if not phase_placed:
                    cells.append("phase_cell")
                    phase_placed = True
                continue
            cell = _column_cell(column)
            cells.append(self.replaced_columns.get(cell.__name__, cell))
        if self.has_phase() and not phase_placed:
            cells.append("phase_cell")
        cells.extend(self.extra_list_display)
        if self.has_status():
            cells.append("conditions_cell")
        cells += ["labels_cell", "age_cell"]
        return cells

    def get_list_display_links(self, request, list_display):
        return ["name_cell"]

    @admin.display(description="NAME", ordering="name")
    def name_cell(self, obj):
        if obj.deletion_timestamp is not None:
            return format_html(
                "{} {}",
                obj.name,
                badge(
                    "Terminating",
                    "warn",
                    f"deletionTimestamp {timestamp(obj.deletion_timestamp)}; "
                    f"finalizers: {', '.join(map(str, obj.finalizers or [])) or 'none'}",
                ),
            )
        return obj.name

    @admin.display(description="NAMESPACE", ordering="namespace")
    def namespace_cell(self, obj):
        return obj.namespace

    @admin.display(description="PHASE", ordering="phase")
    def phase_cell(self, obj):
        phase = getattr(obj, "phase", "") or ""
        if not phase:
            return ""
        return badge(phase, phase_tone(phase))

    @admin.display(description="CONDITIONS")
    def conditions_cell(self, obj):
        return condition_badges(self.status_of(obj), self.condition_tone_for(obj))

    @admin.display(description="LABELS")
    def labels_cell(self, obj):
        return label_chips(obj.labels, LIST_LABEL_CHIPS)

    @admin.display(description="AGE", ordering="-creation_timestamp")
    def age_cell(self, obj):
        return format_html(
            '<span title="{}">{}</span>',
            timestamp(obj.creation_timestamp),
            age(obj.creation_timestamp),
        )
