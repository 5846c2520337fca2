"""The runtimed heartbeat: what this pod is and runs, sent to the control plane every N seconds.

A daemon thread starts on Celery's ``worker_ready`` (so the first beat means "ready to take
Runs") and stops on ``worker_shutdown``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable

from celery import Celery, signals

from .config import PodConfig
from .execute import Clock, utc_now
from .protocol import HeartbeatMessage
from .reporting import Reporter, rfc3339
from .tasks import ActiveRuns

log = logging.getLogger("runtimed.heartbeat")


def heartbeat_message(
    config: PodConfig, active: ActiveRuns, clock: Clock = utc_now
) -> HeartbeatMessage:
    return {
        "namespace": config.namespace,
        "runtime": config.runtime,
        "podName": config.pod_name,
        "podUID": config.pod_uid,
        "podIncarnation": config.pod_incarnation,
        "capacity": dict(config.capacity),
        "activeRuns": active.snapshot(),
        # repeated until they age out: the control plane applies any it missed
        "recentReports": active.recent_reports(),
        "time": rfc3339(clock()),
        "workspacePath": str(config.workspace),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "dataplane": config.dataplane_address,
    }


class Heartbeat:
    """Calls ``beat`` right away and then every ``interval`` seconds, on a daemon thread."""

    def __init__(self, beat: Callable[[], object], interval: float) -> None:
        self._beat = beat
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="runtimed-heartbeat", daemon=True)
        self._thread.start()

    def beat_now(self) -> None:
        """One beat outside the schedule (the last one before runtimed exits)."""
        try:
            self._beat()
        except Exception:  # noqa: BLE001 - best effort
            log.exception("heartbeat failed")

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        while True:
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a bad beat must not end the heartbeat
                log.exception("heartbeat failed")
            if self._stop.wait(self.interval):
                return


def pod_heartbeat(
    config: PodConfig, active: ActiveRuns, reporter: Reporter, clock: Clock = utc_now
) -> Heartbeat:
    return Heartbeat(
        lambda: reporter.heartbeat(heartbeat_message(config, active, clock)),
        config.heartbeat_seconds,
    )


def connect(app: Celery, heartbeat: Heartbeat) -> None:
    """Start ``heartbeat`` when ``app``'s worker is ready; stop it when the worker shuts down."""

    def on_ready(sender: object = None, **_: object) -> None:
        if getattr(sender, "app", None) is app:
            log.info("worker ready; heartbeat every %gs", heartbeat.interval)
            heartbeat.start()

    def on_shutdown(sender: object = None, **_: object) -> None:
        if getattr(sender, "app", None) is app:
            heartbeat.stop()

    # strong references: the handlers are closures that nothing else keeps alive
    signals.worker_ready.connect(on_ready, weak=False)
    signals.worker_shutdown.connect(on_shutdown, weak=False)
