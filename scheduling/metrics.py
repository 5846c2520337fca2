"""Prometheus metrics of the scheduler. Labels never carry user-controlled values: plugin and
reason are fixed strings of the code, never names, namespaces or selectors."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from runtimed.protocol import Phase, Reason

PASS_SECONDS = Histogram(
    "kruntimes_scheduler_pass_duration_seconds",
    "Duration of one scheduling pass.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
CYCLE_SECONDS = Histogram(
    "kruntimes_scheduler_cycle_duration_seconds",
    "Scheduling one Run: PreFilter to Score.",
    buckets=(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1),
)
QUEUE_WAIT_SECONDS = Histogram(
    "kruntimes_scheduler_queue_wait_seconds",
    "From Run creation to its bind.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
RESULTS = Counter("kruntimes_scheduler_results_total", "Scheduling attempts by result.", ["result"])
FILTER_REJECTIONS = Counter(
    "kruntimes_scheduler_filter_rejections_total",
    "Pods a Filter plugin rejected.",
    ["plugin", "reason"],
)
RESERVATION_CONFLICTS = Counter(
    "kruntimes_scheduler_reservation_conflicts_total",
    "Assumptions released because the bind lost a race.",
    ["stage"],
)
WAKEUPS = Counter(
    "kruntimes_scheduler_pending_run_wakeups_total", "Requests for a scheduling pass.", ["source"]
)

# --- Runs after Bind ------------------------------------------------------------------------

# The reasons an attempt can end with; anything else (a newer runtimed) counts as "Other".
ATTEMPT_REASONS = frozenset({*Reason.ALL, Phase.SUCCEEDED, "Other"})
ATTEMPTS_ENDED = Counter(
    "kruntimes_run_attempts_ended_total",
    "Run attempts that ended, by how.",
    ["phase", "reason", "retried"],
)
ARTIFACT_CLEANUPS = Counter(
    "kruntimes_run_artifact_cleanups_total",
    "Deleted Runs' artifact removals, by result.",
    ["result"],
)
TTL_DELETIONS = Counter(
    "kruntimes_run_ttl_deletions_total", "Finished Runs deleted by ttlSecondsAfterFinished."
)
LOG_BYTES = Counter(
    "kruntimes_run_log_bytes_total", "Run output bytes stored from runtimed's log chunks."
)


def attempt_reason(reason: str) -> str:
    return reason if reason in ATTEMPT_REASONS else "Other"


# --- faults ---------------------------------------------------------------------------------

CONTROL_PLANE_GAPS = Counter(
    "kruntimes_control_plane_gaps_total",
    "Periodic passes that ran late enough to mean the control plane was cut off (every "
    "Runtime Pod then gets a fresh grace before its silence counts).",
)
DISRUPTED_NAMESPACES = Gauge(
    "kruntimes_disrupted_namespaces",
    "Namespaces where most Runtime Pods are silent at once, so silence fails no Run.",
    multiprocess_mode="max",
)
LATE_REPORTS = Counter(
    "kruntimes_run_late_reports_total",
    "Final reports for an attempt the control plane had already ended otherwise, by what the "
    "report said and how the attempt had been ended (superseded: a later attempt exists).",
    ["phase", "ended_as"],
)
RECOVERED_REPORTS = Counter(
    "kruntimes_run_recovered_reports_total",
    "Final reports read from a gone Runtime Pod's disk that ended a Run.",
)
