"""The scheduling tiles of the overview (``portal.overview``): Runs by phase, the oldest
Pending Run and why, wait and duration percentiles, failures by reason, throughput, and the
Runtimes' pods and run slots. Every count links to the change list it counts.

Each query is bounded: active phases through the phase index, finished Runs through the
``finished_at`` index over a window (an hour, a day), counts grouped in SQL; the percentiles
read at most ``TIMING_SAMPLE`` rows of the last hour.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count
from django.db.models.functions import TruncMinute
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from portal import overview
from portal.machinery.conditions import time_or_none
from portal.overview.charts import stacked_bars
from portal.resource_admin import NONE, age, badge, elapsed, simple_table
from portal.resource_admin.render import phase_tone
from scheduling.models import ACTIVE_PHASES, TERMINAL_PHASES, Run, RunPhase, Runtime, RuntimePod

GROUP = "kruntimes.io"
RUN = "scheduling.run"
RUNTIME = "scheduling.runtime"
POD = "scheduling.runtimepod"
FAILED = (RunPhase.FAILED, RunPhase.TIMEOUT)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)
TIMING_SAMPLE = 5000
MAX_RUNTIMES = 50
MAX_REASONS = 12
CHART_SERIES = (
    (RunPhase.SUCCEEDED.value, "ok"),
    (RunPhase.FAILED.value, "bad"),
    (RunPhase.TIMEOUT.value, "warn"),
    (RunPhase.CANCELLED.value, "unknown"),
)


def tone(phase: str) -> str:
    return "warn" if phase == RunPhase.TIMEOUT else phase_tone(phase)


def runs(view: overview.OverviewView):
    return Run.objects.filter(namespace__in=view.namespaces(GROUP, "runs"))


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (what p50/p95 mean on a dashboard)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def stat(value: Any, label: Any, title: str = "") -> SafeString:
    """A big number (``value``, linked) over its ``label``."""
    return format_html(
        '<span class="k-stat" title="{}"><span class="k-big">{}</span>'
        '<span class="k-muted">{}</span></span>',
        title,
        value,
        label,
    )


def phase_counts(view) -> tuple[dict[str, int], dict[str, int]]:
    """(active phase -> count now, terminal phase -> count finished in the last 24 h)."""
    base = runs(view)
    active = dict(
        base.filter(phase__in=(RunPhase.PENDING, *ACTIVE_PHASES))
        .values_list("phase")
        .annotate(n=Count("pk"))
        .values_list("phase", "n")
    )
    finished = dict(
        base.filter(finished_at__gte=view.now - DAY, phase__in=TERMINAL_PHASES)
        .values_list("phase")
        .annotate(n=Count("pk"))
        .values_list("phase", "n")
    )
    return active, finished


def render_runs(view: overview.OverviewView) -> SafeString:
    if not view.namespaces(GROUP, "runs"):
        return mark_safe('<span class="k-muted">no namespace where you may list Runs</span>')
    active, finished = phase_counts(view)
    now_stats = [
        stat(
            view.link(active.get(phase, 0), RUN, phase__exact=phase),
            badge(phase, tone(phase)),
        )
        for phase in (RunPhase.PENDING, *ACTIVE_PHASES)
    ]
    day_stats = [
        stat(
            view.link(finished.get(phase, 0), RUN, phase__exact=phase, finished="24h"),
            badge(phase, tone(phase)),
        )
        for phase in TERMINAL_PHASES
    ]
    oldest = (
        runs(view)
        .filter(phase=RunPhase.PENDING)
        .order_by("creation_timestamp", "pk")
        .only("pk", "namespace", "name", "creation_timestamp", "status")
        .first()
    )
    if oldest is None:
        waiting = mark_safe('<span class="k-muted">no Run is waiting</span>')
    else:
        status = oldest.status if isinstance(oldest.status, dict) else {}
        reason, message = status.get("reason") or "", status.get("message") or ""
        url = overview.admin_change_url(view.site, oldest)
        waiting = format_html(
            'oldest Pending: <a href="{}" id="oldest-pending">{}/{}</a>, waiting {} {} '
            '<span class="k-pre">{}</span>',
            url,
            oldest.namespace,
            oldest.name,
            age(oldest.creation_timestamp),
            badge(reason, "pending", message) if reason else "",
            message[:200] if message else "waiting for the scheduler",
        )
    return format_html(
        '<div class="k-muted">now</div><div id="runs-now">{}</div>'
        '<div class="k-muted">finished in the last 24 h</div><div id="runs-24h">{}</div>'
        "<div>{}</div>",
        format_html_join("", "{}", ((s,) for s in now_stats)),
        format_html_join("", "{}", ((s,) for s in day_stats)),
        waiting,
    )


def render_timing(view: overview.OverviewView) -> SafeString:
    if not view.namespaces(GROUP, "runs"):
        return NONE
    rows = list(
        runs(view)
        .filter(finished_at__gte=view.now - HOUR, phase__in=TERMINAL_PHASES)
        .order_by("-finished_at")
        .values_list("creation_timestamp", "status__startTime", "finished_at")[:TIMING_SAMPLE]
    )
    waits, durations = [], []
    for created, started, finished in rows:
        start = time_or_none(started)
        if start is None:
            continue
        waits.append(max(0.0, (start - created.replace(microsecond=0)).total_seconds()))
        durations.append(max(0.0, (finished - start).total_seconds()))

    def shown(value: float | None) -> str:
        return "—" if value is None else elapsed(value)

    table = simple_table(
        ("", "p50", "p95"),
        [
            (
                "wait (created → Running)",
                shown(percentile(waits, 50)),
                shown(percentile(waits, 95)),
            ),
            (
                "duration (Running → end)",
                shown(percentile(durations, 50)),
                shown(percentile(durations, 95)),
            ),
        ],
    )
    return format_html(
        '<div id="timing">{}</div><div class="k-muted">over {} Runs that finished in the last hour'
        "{}</div>",
        table,
        view.link(len(rows), RUN, finished="1h"),
        f" (the latest {TIMING_SAMPLE})" if len(rows) >= TIMING_SAMPLE else "",
    )


def render_failures(view: overview.OverviewView) -> SafeString:
    if not view.namespaces(GROUP, "runs"):
        return NONE
    grouped = list(
        runs(view)
        .filter(finished_at__gte=view.now - DAY, phase__in=FAILED)
        .values("status__reason")
        .annotate(n=Count("pk"))
        .order_by("-n")[:MAX_REASONS]
    )
    if not grouped:
        return mark_safe(
            '<span class="k-muted" id="failures">no Run failed in the last 24 h</span>'
        )
    rows = [
        (
            badge(row["status__reason"] or "(none)", "bad"),
            view.link(
                row["n"], RUN, outcome="failed", finished="24h", reason=row["status__reason"] or ""
            ),
        )
        for row in grouped
    ]
    total = sum(row["n"] for row in grouped)
    return format_html(
        '<div id="failures">{}</div><div class="k-muted">{} failed or timed out in all</div>',
        simple_table(("reason", "Runs"), rows),
        view.link(total, RUN, outcome="failed", finished="24h"),
    )


def render_throughput(view: overview.OverviewView) -> SafeString:
    if not view.namespaces(GROUP, "runs"):
        return NONE
    start = (view.now - HOUR).replace(second=0, microsecond=0) + timedelta(minutes=1)
    counts = (
        runs(view)
        .filter(finished_at__gte=start, phase__in=TERMINAL_PHASES)
        .annotate(minute=TruncMinute("finished_at"))
        .values("minute", "phase")
        .annotate(n=Count("pk"))
    )
    buckets = [{"_label": (start + timedelta(minutes=i)).strftime("%H:%M")} for i in range(60)]
    total = 0
    for row in counts:
        index = int((row["minute"] - start).total_seconds() // 60)
        if 0 <= index < 60:
            buckets[index][row["phase"]] = buckets[index].get(row["phase"], 0) + row["n"]
            total += row["n"]
    chart = stacked_bars(
        buckets,
        CHART_SERIES,
        labels=(buckets[0]["_label"], buckets[-1]["_label"] + " UTC"),
        title="Runs finished per minute, last hour",
    )
    return format_html(
        '<div id="throughput">{}</div><div class="k-muted">{} Runs finished in the last hour</div>',
        chart,
        view.link(total, RUN, finished="1h"),
    )


def render_runtimes(view: overview.OverviewView) -> SafeString:
    namespaces = view.namespaces(GROUP, "runtimes")
    if not namespaces:
        return mark_safe('<span class="k-muted">no namespace where you may list Runtimes</span>')
    runtimes = list(
        Runtime.objects.filter(namespace__in=namespaces)
        .order_by("namespace", "name")
        .only("pk", "namespace", "name", "replicas", "ready_replicas")[:MAX_RUNTIMES]
    )
    if not runtimes:
        return mark_safe('<span class="k-muted">no Runtimes</span>')
    keys = {(rt.namespace, rt.name) for rt in runtimes}
    slots: dict[tuple[str, str], list[int]] = {key: [0, 0] for key in keys}  # ready pods, slots
    pods = RuntimePod.objects.filter(
        namespace__in={ns for ns, _ in keys}, runtime__in={name for _, name in keys}, ready=True
    ).values_list("namespace", "runtime", "capacity")
    for ns, runtime, capacity in pods:
        if (ns, runtime) in slots:
            cap = capacity.get("runs") if isinstance(capacity, dict) else None
            slots[(ns, runtime)][0] += 1
            slots[(ns, runtime)][1] += cap if isinstance(cap, int) else 1
    used = {
        (ns, rt): n
        for ns, rt, n in Run.objects.filter(
            phase__in=ACTIVE_PHASES,
            namespace__in={ns for ns, _ in keys},
            runtime__in={name for _, name in keys},
        )
        .values_list("namespace", "runtime")
        .annotate(n=Count("pk"))
        .values_list("namespace", "runtime", "n")
    }
    rows = []
    for rt in runtimes:
        ready_pods, total_slots = slots[(rt.namespace, rt.name)]
        in_use = used.get((rt.namespace, rt.name), 0)
        pods_text = f"{ready_pods}/{rt.replicas}"
        slots_text = f"{in_use}/{total_slots}"
        rows.append(
            (
                format_html(
                    '<a href="{}">{}</a> <span class="k-muted">{}</span>',
                    overview.admin_change_url(view.site, rt),
                    rt.name,
                    rt.namespace,
                ),
                view.link(
                    badge(
                        pods_text,
                        "ok" if ready_pods >= rt.replicas else "warn",
                        "ready/desired pods",
                    ),
                    POD,
                    namespace=rt.namespace,
                    runtime=rt.name,
                ),
                view.link(
                    badge(
                        slots_text,
                        "warn" if total_slots and in_use >= total_slots else "info",
                        "run slots used/total",
                    ),
                    RUN,
                    namespace=rt.namespace,
                    runtime=rt.name,
                    outcome="active",
                ),
            )
        )
    return format_html(
        '<div id="runtimes">{}</div>',
        simple_table(("Runtime", "pods ready/desired", "run slots used/total"), rows),
    )


def register() -> None:
    overview.place("workloads", RUN, order=10)
    overview.place("capacity", RUNTIME, order=10)
    overview.place("capacity", POD, order=20)
    overview.register_tile(overview.Tile("runs", "Runs", "workloads", render_runs, order=10))
    overview.register_tile(
        overview.Tile("failures", "Failures, last 24 h", "workloads", render_failures, order=20)
    )
    overview.register_tile(
        overview.Tile(
            "timing", "Wait and duration, last hour", "workloads", render_timing, order=30
        )
    )
    overview.register_tile(
        overview.Tile(
            "throughput", "Throughput, last hour", "workloads", render_throughput, order=40
        )
    )
    overview.register_tile(
        overview.Tile("runtimes", "Runtimes", "capacity", render_runtimes, order=10)
    )
