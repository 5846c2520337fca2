"""An object's Events on its change page: the table ``kubectl describe`` ends with.

``events_html(obj)`` renders the newest Events about one object (by its uid), newest first;
``EventsMixin`` adds it as the ``events_table`` field every detail page shows in its "Events"
section (a page that lays out its own fieldsets keeps it by naming ``events_table``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .render import age, badge, compact, simple_table

SHOWN = 50


def _type_badge(event_type: str) -> SafeString:
    return badge(event_type or "Normal", "warn" if event_type == "Warning" else "info")


def _count_cell(event: Any) -> Any:
    if (event.count or 1) <= 1:
        return age(event.last_seen)
    return format_html(
        "{} <span class='k-muted'>(x{} over {})</span>",
        age(event.last_seen),
        event.count,
        age(_first_seen(event)),
    )


def _first_seen(event: Any) -> Any:
    from portal.machinery.conditions import time_or_none

    return time_or_none(event.first_timestamp) or event.creation_timestamp


def events_html(obj: Any, limit: int = SHOWN) -> SafeString:
    """The Events about ``obj`` as a table (type, reason, age and count, source, message)."""
    from portal.events_recorder import events_for

    events = events_for(obj, limit)
    if not events:
        return format_html("<span class='k-muted'>{}</span>", "no Events in the last hour")
    rows = [
        (
            _type_badge(event.type),
            compact(event.reason),
            _count_cell(event),
            compact((event.source or {}).get("component") or event.reporting_component),
            format_html('<span class="k-pre">{}</span>', event.message),
        )
        for event in events
    ]
    return simple_table(("type", "reason", "age", "from", "message"), rows, "k-table k-events")


class EventsMixin:
    """The ``events_table`` display field; ``show_events = False`` leaves the section out."""

    show_events = True

    @admin.display(description="events")
    def events_table(self, obj):
        return events_html(obj)
