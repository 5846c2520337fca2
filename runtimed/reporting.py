"""Talking to the control plane: tasks sent by name to the ``control`` queue.

A broker error never reaches the execution path: a send is retried a few times with a short
backoff, then logged and dropped. The control plane's level-triggered passes heal the rest
(a lost terminal report is re-sent when the Run is dispatched again; see ``tasks``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, overload

from .protocol import (
    CONTROL_QUEUE,
    HEARTBEAT_TASK,
    REPORT_RUN_TASK,
    ReportExtras,
    RunReport,
    status_message,
)
from .refs import ArtifactRef

log = logging.getLogger("runtimed.reporting")


@overload
def rfc3339(moment: datetime) -> str: ...
@overload
def rfc3339(moment: None) -> None: ...
@overload
def rfc3339(moment: datetime | None) -> str | None: ...
def rfc3339(moment: datetime | None) -> str | None:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC (naive datetimes are taken as UTC)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Reporter:
    """Sends ``scheduling.*`` tasks by name; never raises."""

    def __init__(
        self,
        send_task: Callable[..., Any],
        *,
        retries: int = 3,
        backoff: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._send_task = send_task  # usually ``app.send_task``
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep

    def send(self, name: str, kwargs: Mapping[str, Any], *, retries: int | None = None) -> bool:
        attempts = 1 + (self.retries if retries is None else retries)
        for attempt in range(attempts):
            try:
                self._send_task(name, kwargs=kwargs, queue=CONTROL_QUEUE)
                return True
            except Exception as exc:  # noqa: BLE001 - any broker failure is only logged
                last = attempt + 1 == attempts
                log.warning(
                    "sending %s failed (attempt %d/%d): %s%s",
                    name,
                    attempt + 1,
                    attempts,
                    exc,
                    "; giving up" if last else "",
                )
                if not last:
                    self._sleep(self.backoff * 2**attempt)
        return False

    def report_run(self, report: Mapping[str, Any]) -> bool:
        """Send a final or progress report: a RunReport, or one recorded on disk earlier."""
        return self.send(REPORT_RUN_TASK, {"report": report})

    def heartbeat(self, heartbeat: Mapping[str, Any]) -> bool:
        # the next beat comes soon anyway: one quick retry at most
        return self.send(HEARTBEAT_TASK, {"heartbeat": heartbeat}, retries=1)


def run_report(
    *,
    namespace: str,
    name: str,
    uid: str,
    attempt: int,
    pod_name: str,
    pod_uid: str,
    phase: str,
    reason: str = "",
    message: str = "",
    exit_code: int | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    outputs: Mapping[str, str] | None = None,
    artifact_refs: Sequence[ArtifactRef] | None = None,
    artifact_store: Mapping[str, Any] | None = None,
) -> RunReport:
    """The ``scheduling.report_run`` kwarg ``report``, exactly as the control plane reads it.

    ``artifactStore`` (the store this attempt used, for cleanup) rides on every report that has
    it; ``outputs`` and ``artifactRefs`` only on a final report that has any.
    """
    extra: ReportExtras = {}
    if outputs:
        extra["outputs"] = outputs
    if artifact_refs:
        extra["artifactRefs"] = artifact_refs
    if artifact_store:
        extra["artifactStore"] = artifact_store
    return {
        **extra,
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "attempt": attempt,
        "podName": pod_name,
        "podUID": pod_uid,
        "phase": phase,
        "reason": reason,
        "message": status_message(message),
        "exitCode": exit_code,
        "startTime": rfc3339(start),
        "completionTime": rfc3339(end),
    }
