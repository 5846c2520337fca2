"""The Celery app of one Runtime Pod: consumes only ``runtimed.<pod-name>``, no Django."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from celery import Celery, signals
from kombu import Exchange, Queue

from . import dataplane, drain, fstransport, runtime_host
from . import heartbeat as heartbeats
from .config import PodConfig
from .execute import Clock, utc_now
from .functions import FunctionTable
from .outbox import Outbox
from .protocol import OUTBOX_DIR
from .reporting import Reporter
from .tasks import ActiveRuns, RunService, register

log = logging.getLogger("runtimed.app")


@dataclass
class Runtimed:
    """Everything one pod's worker is made of, for ``__main__`` and for tests."""

    config: PodConfig
    app: Celery
    reporter: Reporter
    service: RunService
    heartbeat: heartbeats.Heartbeat


def configure(app: Celery, config: PodConfig) -> None:
    queue = config.queue
    if config.broker_url.startswith("filesystem://"):
        app.conf.broker_transport = fstransport.TRANSPORT  # atomic messages
    app.conf.update(
        broker_url=config.broker_url,
        broker_transport_options=config.transport_options(),
        broker_connection_retry_on_startup=True,
        # publishing a report must not hang on a dead broker; Reporter retries on top
        broker_connection_timeout=2,
        task_publish_retry_policy={
            "max_retries": 2,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        # On purpose: a runtimed that dies mid-Run must not get the Run redelivered and run it
        # twice; the control plane fails it ExecutionLost instead.
        task_acks_late=False,
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        task_default_queue=queue,
        task_queues=[Queue(queue, Exchange(queue, type="direct"), routing_key=queue)],
        worker_hijack_root_logger=False,
        enable_utc=True,
        timezone="UTC",
    )


def build(config: PodConfig, *, clock: Clock = utc_now) -> Runtimed:
    app = Celery(f"runtimed.{config.pod_name}", set_as_current=False)
    configure(app, config)
    reporter = Reporter(app.send_task)
    active = ActiveRuns(Outbox(config.workspace / OUTBOX_DIR), FunctionTable())
    service = RunService(config, reporter, clock=clock, active=active)
    register(app, service)
    beat = heartbeats.pod_heartbeat(config, active, reporter, clock)
    drain.connect(app, service, beat, config.termination_grace_seconds)  # before: last beat
    heartbeats.connect(app, beat)
    connect_dataplane(app, config, active.functions)
    warm_runtime_server(app, config)
    return Runtimed(config, app, reporter, service, beat)


def warm_runtime_server(app: Celery, config: PodConfig) -> None:
    """Start the pod's Runtime Server as soon as the worker is ready, not at the first Run:
    a warm pod's first step (or function) does not pay for the server's start."""

    def on_ready(sender: object = None, **_: object) -> None:
        if getattr(sender, "app", None) is not app:
            return

        def start() -> None:
            try:
                runtime_host.for_config(config).start()
            except OSError as exc:  # the first Run tries again, and fails with the reason
                log.warning("the Runtime Server did not start: %s", exc)

        threading.Thread(target=start, name="runtime-server-start", daemon=True).start()

    signals.worker_ready.connect(on_ready, weak=False)


def connect_dataplane(app: Celery, config: PodConfig, table: FunctionTable) -> None:
    """Serve the dataplane (``runtimed.dataplane``) while ``app``'s worker runs, when the pod
    has an address for it."""
    if not config.dataplane_address:
        return
    servers: list[dataplane.Server] = []

    def on_ready(sender: object = None, **_: object) -> None:
        if getattr(sender, "app", None) is app and not servers:
            servers.append(
                dataplane.serve(
                    config.dataplane_address, table, config.dataplane_key, config.pod_uid
                )
            )

    def on_shutdown(sender: object = None, **_: object) -> None:
        if getattr(sender, "app", None) is app and servers:
            servers.pop().stop()

    signals.worker_ready.connect(on_ready, weak=False)
    signals.worker_shutdown.connect(on_shutdown, weak=False)


def make_app(config: PodConfig) -> Celery:
    return build(config).app
