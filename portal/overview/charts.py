"""Small charts rendered on the server as inline SVG (no script, no CDN)."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

TONES = {
    "ok": "#1e7e34",
    "bad": "#c62828",
    "warn": "#b45309",
    "info": "#1d4ed8",
    "unknown": "#6b7280",
}


def stacked_bars(
    buckets: Sequence[dict[str, int]],
    series: Sequence[tuple[str, str]],
    *,
    labels: tuple[str, str] = ("", ""),
    title: str = "",
    width: int = 600,
    height: int = 90,
) -> SafeString:
    """One bar per bucket, each stacked by ``series`` ((key, tone) bottom up); each bar's
    ``<title>`` says its counts."""
    top = max([sum(b.get(k, 0) for k, _ in series) for b in buckets] + [1])
    n = max(len(buckets), 1)
    step = width / n
    bar = max(step - 1.0, 1.0)
    rects = []
    for i, bucket in enumerate(buckets):
        y = float(height)
        for key, tone in series:
            count = bucket.get(key, 0)
            if not count:
                continue
            h = count / top * height
            y -= h
            rects.append((f"{i * step:.1f}", f"{y:.1f}", f"{bar:.1f}", f"{h:.1f}", TONES[tone]))
    bars = format_html_join(
        "", '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"></rect>', rects
    )
    tips = format_html_join(
        "",
        '<rect x="{}" y="0" width="{}" height="{}" fill="transparent"><title>{}</title></rect>',
        (
            (
                f"{i * step:.1f}",
                f"{step:.1f}",
                height,
                b.get("_label", "")
                + ": "
                + (", ".join(f"{k} {b[k]}" for k, _ in series if b.get(k)) or "none"),
            )
            for i, b in enumerate(buckets)
        ),
    )
    axis = format_html(
        '<line x1="0" y1="{h}" x2="{w}" y2="{h}" stroke="#999" stroke-width="1"></line>'
        '<text x="0" y="{ty}" font-size="10" fill="#666">{}</text>'
        '<text x="{w}" y="{ty}" font-size="10" fill="#666" text-anchor="end">{}</text>'
        '<text x="2" y="10" font-size="10" fill="#666">{}</text>',
        labels[0],
        labels[1],
        f"max {top}/bucket",
        h=height,
        w=width,
        ty=height + 12,
    )
    legend = format_html_join(
        "",
        '<span><span class="k-swatch" style="background:{}"></span>{}</span>',
        ((TONES[tone], key) for key, tone in series),
    )
    return format_html(
        '<svg class="k-chart" role="img" aria-label="{}" viewBox="0 0 {} {}" width="{}" '
        'height="{}" xmlns="http://www.w3.org/2000/svg">{}{}{}</svg><div class="k-legend">{}</div>',
        title,
        width,
        height + 14,
        width,
        height + 14,
        bars,
        tips,
        axis,
        legend or mark_safe(""),
    )
