"""A graceful stop: on SIGTERM runtimed takes no new Runs, lets running steps finish for the
termination grace, stops those still running after it (PodTerminating), delivers every report
it can (the rest stay in the outbox on disk), and exits.

Celery's warm shutdown already stops consuming and waits for the tasks in flight; this adds
the deadline and the last heartbeat.
"""

from __future__ import annotations

import logging
import threading

from celery import Celery, signals

from .heartbeat import Heartbeat
from .tasks import RunService

log = logging.getLogger("runtimed.drain")


def connect(app: Celery, service: RunService, heartbeat: Heartbeat, grace: float) -> None:
    started = threading.Event()

    def on_shutting_down(**_: object) -> None:
        if started.is_set():
            return
        started.set()
        log.info("stopping: no new Runs; running steps have %gs to finish", grace)
        timer = threading.Timer(grace, service.terminate_all)
        timer.daemon = True
        timer.start()
        service.terminate_functions()  # serving functions end now: no grace makes them finish

    def on_shutdown(sender: object = None, **_: object) -> None:
        if getattr(sender, "app", None) is app and heartbeat.running:
            heartbeat.beat_now()  # the last word: the reports still owed, no active Runs

    # a runtimed process runs one app, so the shutting-down signal (sent by hostname) is ours
    signals.worker_shutting_down.connect(on_shutting_down, weak=False)
    signals.worker_shutdown.connect(on_shutdown, weak=False)
