"""The wire protocol between the control plane and runtimed: task and queue names.

Both sides import these (the control plane may import runtimed; runtimed imports nothing of
the control plane), so a name cannot drift on one side only. Payload and report shapes are
``runtimed.payload`` (what the control plane sends) and ``runtimed.reporting.run_report`` /
``runtimed.heartbeat.heartbeat_message`` (what runtimed sends back).
"""

from __future__ import annotations

CONTROL_QUEUE = "control"  # the control plane's queue: reports, heartbeats, log chunks
POD_QUEUE_PREFIX = "runtimed."  # each Runtime Pod consumes runtimed.<pod-name>

# control plane -> runtimed (on the pod's queue)
EXECUTE_RUN_TASK = "runtimed.execute_run"
CANCEL_RUN_TASK = "runtimed.cancel_run"
CONFIRM_REPORTS_TASK = "runtimed.confirm_reports"

# runtimed -> control plane (on CONTROL_QUEUE)
REPORT_RUN_TASK = "scheduling.report_run"
HEARTBEAT_TASK = "scheduling.runtime_pod_heartbeat"
APPEND_LOG_TASK = "scheduling.append_log"


def pod_queue(pod_name: str) -> str:
    return f"{POD_QUEUE_PREFIX}{pod_name}"
