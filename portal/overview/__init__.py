"""The console's overview: the admin index answers "what is running, what is stuck, what
failed and why" per namespace the user may see, in tiles, above the models grouped in
sections an operator reads in order (workloads, capacity, definitions, access, a collapsed
System).

Apps add to it from their admin modules, never by editing the index template::

    overview.place("workloads", "scheduling.run", order=10)
    overview.register_tile(overview.Tile("runs", "Runs", "workloads", render_runs, order=10))

``render(view)`` gets an ``OverviewView`` (the request, the clock, the namespaces the user may
list a resource in, links to filtered change lists) and returns HTML; a tile that raises is
shown as an error, not a broken page. Every query a tile runs must be bounded (an indexed
filter, aggregated in SQL).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

log = logging.getLogger(__name__)

# (key, title, open): the index's sections, in order; models not placed go to "system"
SECTIONS: tuple[tuple[str, str, bool], ...] = (
    ("workloads", "Workloads", True),
    ("capacity", "Capacity", True),
    ("definitions", "Definitions", True),
    ("access", "Access", True),
    ("system", "System", False),
)
SECTION_KEYS = {key for key, _title, _open in SECTIONS}
MAX_NAMESPACES = 200  # the overview reviews at most this many namespaces per resource


@dataclass(frozen=True)
class Tile:
    key: str
    title: str
    section: str
    render: Callable[[OverviewView], SafeString | str]
    order: int = 100


_tiles: dict[str, Tile] = {}
_placement: dict[str, tuple[str, int]] = {}  # "app_label.model_name" -> (section, order)


def register_tile(tile: Tile) -> None:
    if tile.section not in SECTION_KEYS:
        raise ValueError(f"unknown overview section {tile.section!r}")
    _tiles[tile.key] = tile


def tiles() -> list[Tile]:
    order = {key: i for i, (key, _t, _o) in enumerate(SECTIONS)}
    return sorted(_tiles.values(), key=lambda t: (order[t.section], t.order, t.key))


def place(section: str, model: str, order: int = 100) -> None:
    """Show the admin of ``model`` ("app_label.model_name") in ``section`` of the index."""
    if section not in SECTION_KEYS:
        raise ValueError(f"unknown overview section {section!r}")
    _placement[model.lower()] = (section, order)


def placement(model: str) -> tuple[str, int]:
    return _placement.get(model.lower(), ("system", 1000))


@dataclass
class OverviewView:
    """What a tile renders with."""

    request: object
    site: admin.AdminSite
    namespace: str = ""  # "" for every namespace the user may see
    now: datetime = field(default_factory=timezone.now)
    _visible: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def namespaces(self, group: str, resource: str) -> list[str]:
        """The namespaces (of the selected one) where the user may list ``resource``."""
        key = (group, resource)
        if key not in self._visible:
            self._visible[key] = visible_namespaces(
                self.request.user, group, resource, self.namespace
            )
        return self._visible[key]

    def changelist(self, model: str, **query) -> str | None:
        """The change list of ``model`` ("app_label.model_name") filtered by ``query``."""
        app_label, model_name = model.lower().split(".")
        try:
            url = reverse(f"{self.site.name}:{app_label}_{model_name}_changelist")
        except NoReverseMatch:
            return None
        if self.namespace and "namespace" not in query:
            query["namespace"] = self.namespace
        query = {k: v for k, v in query.items() if v is not None}
        return f"{url}?{urlencode(query)}" if query else url

    def link(self, text, model: str, **query) -> SafeString:
        """``text`` linked to the list it counts (plain text when the list is not served)."""
        url = self.changelist(model, **query)
        if url is None:
            return format_html("{}", text)
        return format_html('<a href="{}">{}</a>', url, text)


def visible_namespaces(user, group: str, resource: str, only: str = "") -> list[str]:
    """Namespaces where ``user`` may ``list`` ``resource`` (at most MAX_NAMESPACES)."""
    from portal.auth.namespaces import visible_namespaces as visible

    return visible(user, group, resource, only, limit=MAX_NAMESPACES)


def render_tiles(view: OverviewView) -> list[dict]:
    rendered = []
    for tile in tiles():
        try:
            html = tile.render(view)
        except Exception:  # one broken tile must not take the index down
            log.exception("overview tile %s failed", tile.key)
            html = format_html('<span class="k-badge k-bad">{}</span>', "could not be computed")
        rendered.append(
            {"key": tile.key, "title": tile.title, "section": tile.section, "html": html}
        )
    return rendered


def admin_change_url(site: admin.AdminSite, obj) -> str | None:
    opts = obj._meta
    try:
        return reverse(f"{site.name}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    except NoReverseMatch:
        return None


RECENT = timedelta(hours=24)


def phase_tile(
    model,
    model_key: str,
    group: str,
    resource: str,
    phases: Iterable[str],
    finished: Iterable[str] = (),
):
    """A tile's ``render``: how many objects of ``model`` are in each of ``phases`` now, and
    in each of the ``finished`` phases among those created in the last 24 hours (so a failed
    run shows, and the count stays bounded however long the history); two grouped counts
    through the phase and creation-time indexes. Each number links to the list filtered by
    its phase; the total links to the whole list."""
    from django.db.models import Count

    from portal.resource_admin.render import badge, phase_tone

    phases, finished = tuple(phases), tuple(finished)

    def grouped(rows) -> dict[str, int]:
        return dict(rows.values_list("phase").annotate(n=Count("pk")).values_list("phase", "n"))

    def render(view: OverviewView) -> SafeString:
        namespaces = view.namespaces(group, resource)
        if not namespaces:
            return format_html(
                '<span class="k-muted">no namespace where you may list {}</span>', resource
            )
        visible = model.objects.filter(namespace__in=namespaces)
        counts = grouped(visible.filter(phase__in=phases))
        if finished:
            since = timezone.now() - RECENT
            recent = visible.filter(phase__in=finished, creation_timestamp__gte=since)
            counts.update(grouped(recent))
        cells = [
            format_html(
                '<span class="k-stat"><span class="k-big">{}</span><span class="k-muted">{}{}'
                "</span></span>",
                view.link(counts.get(phase, 0), model_key, phase__exact=phase),
                badge(phase or "(none)", phase_tone(phase)),
                format_html(
                    ' <span class="k-muted" title="{}">24 h</span>', "created in the last 24 h"
                )
                if phase in finished
                else "",
            )
            for phase in (*phases, *finished)
        ]
        return format_html(
            '<div id="tile-{}-counts">{}</div><div class="k-muted">{}</div>',
            resource,
            format_html("{}" * len(cells), *cells) if cells else "",
            view.link("all of them", model_key),
        )

    return render
