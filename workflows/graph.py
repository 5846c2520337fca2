"""A workflow's job graph as an inline SVG string: jobs in columns by dependency depth, an edge
for each ``needs``, each node coloured by its phase.

Pure functions of plain data (no Django, no database), so the admin renders it server-side and
the tests check it directly. Whatever the spec holds (unknown needs, a job needing itself, a
cycle) the layout terminates: an edge closing a cycle is left out of the layering.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from html import escape
from typing import Any

NODE_WIDTH = 168
NODE_HEIGHT = 44
COLUMN_GAP = 56
ROW_GAP = 14
MARGIN = 8
LABEL_CHARS = 22

# phase -> (fill, stroke, text)
PHASE_COLOURS: dict[str, tuple[str, str, str]] = {
    "Pending": ("#9ca3af", "#6b7280", "#ffffff"),
    "Waiting": ("#f59e0b", "#b45309", "#1f2937"),
    "Running": ("#2563eb", "#1d4ed8", "#ffffff"),
    "Succeeded": ("#16a34a", "#15803d", "#ffffff"),
    "Failed": ("#dc2626", "#b91c1c", "#ffffff"),
    "Skipped": ("#e5e7eb", "#9ca3af", "#4b5563"),
    "Cancelled": ("#374151", "#111827", "#ffffff"),
}
NO_PHASE = ("#ffffff", "#6b7280", "#1f2937")  # a Workflow's jobs: a template, no phase
UNKNOWN_PHASE = ("#c4b5fd", "#7c3aed", "#1f2937")  # a phase this module does not know


def normalize(jobs: Mapping[str, Any]) -> dict[str, list[str]]:
    """job id -> the jobs it needs that exist, deduplicated, without itself.

    ``jobs`` maps an id to its needs (a list, or one name as a string) or to the job itself
    (a dict with ``needs``); anything else needs nothing."""
    ids = [str(job) for job in jobs]
    known = set(ids)
    result: dict[str, list[str]] = {}
    for raw_id, value in jobs.items():
        job = str(raw_id)
        needs: Any = value.get("needs") if isinstance(value, Mapping) else value
        if isinstance(needs, str):
            needs = [needs]
        if not isinstance(needs, (list, tuple)):
            needs = []
        names = (str(need) for need in needs if isinstance(need, (str, int)))
        result[job] = [need for need in dict.fromkeys(names) if need in known and need != job]
    return result


def layers(jobs: Mapping[str, Any]) -> dict[str, int]:
    """job id -> its column: 0 for a job needing nothing, else one more than the deepest job it
    needs (the longest path from a root).

    A depth-first walk in spec order (an explicit stack: no recursion limit, each job entered
    once, so it always ends) computes it; a need that is still on the walk's path closes a
    cycle and is left out of the layering (its edge is still drawn, pointing back)."""
    needs = normalize(jobs)
    depth: dict[str, int] = {}
    entered: set[str] = set()
    for root in needs:
        if root in entered:
            continue
        entered.add(root)
        path: list[tuple[str, Iterator[str]]] = [(root, iter(needs[root]))]
        while path:
            job, pending = path[-1]
            for need in pending:
                if need not in entered:
                    entered.add(need)
                    path.append((need, iter(needs[need])))
                    break
            else:
                path.pop()
                # needs on the path (a cycle) have no depth yet, finished ones do
                depth[job] = max((depth[n] + 1 for n in needs[job] if n in depth), default=0)
    return {job: depth[job] for job in needs}


def columns(jobs: Mapping[str, Any]) -> list[list[str]]:
    """The jobs of each column, top to bottom: spec order in the first column, then each job
    near the jobs it needs (the mean of their rows), which keeps most edges short."""
    needs = normalize(jobs)
    depth = layers(jobs)
    order = {job: index for index, job in enumerate(needs)}
    result: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    row: dict[str, float] = {}

    def near_needs(job: str) -> tuple[float, int]:
        placed = [row[n] for n in needs[job] if n in row]
        return (sum(placed) / len(placed) if placed else 0.0, order[job])

    for column, members in enumerate(result):
        members.extend(job for job in needs if depth[job] == column)
        if column:
            members.sort(key=near_needs)
        for index, job in enumerate(members):
            row[job] = float(index)
    return result


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def render_svg(
    jobs: Mapping[str, Any],
    phases: Mapping[str, Any] | None = None,
    *,
    links: Mapping[str, str] | None = None,
    title: str = "job graph",
) -> str:
    """The graph as one ``<svg>`` element ("" when there are no jobs). ``phases`` maps a job to
    its phase (omit it for a Workflow: nodes then show no phase); ``links`` maps a job to a URL
    its node links to. Every text and attribute value is escaped."""
    needs = normalize(jobs)
    if not needs:
        return ""
    layout = columns(jobs)
    position: dict[str, tuple[int, int]] = {}
    for column, members in enumerate(layout):
        for index, job in enumerate(members):
            x = MARGIN + column * (NODE_WIDTH + COLUMN_GAP)
            y = MARGIN + index * (NODE_HEIGHT + ROW_GAP)
            position[job] = (x, y)
    rows = max(len(members) for members in layout)
    width = 2 * MARGIN + len(layout) * NODE_WIDTH + (len(layout) - 1) * COLUMN_GAP
    height = 2 * MARGIN + rows * NODE_HEIGHT + (rows - 1) * ROW_GAP

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="k-graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" font-family="sans-serif">',
        f"<title>{escape(title)}</title>",
        '<defs><marker id="k-graph-arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#6b7280"/></marker></defs>',
    ]
    for job, required in needs.items():
        x2, y2 = position[job]
        for need in required:
            x1, y1 = position[need]
            start_x, start_y = x1 + NODE_WIDTH, y1 + NODE_HEIGHT // 2
            end_x, end_y = x2, y2 + NODE_HEIGHT // 2
            bend = max(COLUMN_GAP // 2, abs(end_x - start_x) // 2)
            back = x1 >= x2  # an edge closing a cycle: dashed
            css, dash = ("k-edge k-back", ' stroke-dasharray="4 3"') if back else ("k-edge", "")
            parts.append(
                f'<path class="{css}" data-from="{escape(need)}" data-to="{escape(job)}" '
                f'd="M{start_x},{start_y} C{start_x + bend},{start_y} {end_x - bend},{end_y} '
                f'{end_x},{end_y}" fill="none" stroke="#6b7280" stroke-width="1.5"{dash} '
                'marker-end="url(#k-graph-arrow)"/>'
            )
    for job in needs:
        parts.append(_node(job, position[job], phases, links))
    parts.append("</svg>")
    return "".join(parts)


def _node(
    job: str,
    at: tuple[int, int],
    phases: Mapping[str, Any] | None,
    links: Mapping[str, str] | None,
) -> str:
    x, y = at
    phase = None if phases is None else str(phases.get(job) or "Pending")
    fill, stroke, ink = NO_PHASE if phase is None else PHASE_COLOURS.get(phase, UNKNOWN_PHASE)
    tooltip = job if phase is None else f"{job}: {phase}"
    name_y = y + (NODE_HEIGHT // 2 + 5 if phase is None else 18)
    body = [
        f"<title>{escape(tooltip)}</title>",
        f'<rect x="{x}" y="{y}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="6" ry="6" '
        f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>',
        f'<text x="{x + 10}" y="{name_y}" font-size="13" font-weight="600" '
        f'fill="{ink}">{escape(_label(job))}</text>',
    ]
    if phase is not None:
        body.append(
            f'<text x="{x + 10}" y="{y + 35}" font-size="11" fill="{ink}">{escape(phase)}</text>'
        )
    attributes = f'class="k-node" data-job="{escape(job)}" data-phase="{escape(phase or "")}"'
    url = (links or {}).get(job)
    if url:
        return f'<a href="{escape(url)}" {attributes}>{"".join(body)}</a>'
    return f"<g {attributes}>{''.join(body)}</g>"
