"""The Celery app: reconcilers run on the ``control`` queue; beat uses django-celery-beat."""

from __future__ import annotations

import os

from celery import Celery, signals
from kombu import Queue

from runtimed.protocol import CONTROL_QUEUE

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

DB_REUSE_MAX = 10_000

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_default_queue=CONTROL_QUEUE,
    task_queues=[Queue(CONTROL_QUEUE)],
    task_ignore_result=True,
    # A task is acknowledged after it ran: a worker killed mid-task leaves it for redelivery
    # (Redis); reconcilers are idempotent, so running one twice is harmless.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    # Control tasks are short: a few reserved per process keep the worker busy between polls
    # of the filesystem broker (a message reserved by a killed worker is healed by beat).
    worker_prefetch_multiplier=4,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    # Publishing from a request must not hang on a dead broker: fail fast, beat heals.
    broker_connection_timeout=2,
    task_publish_retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2},
    # Celery's Django fixup closes every database connection before and after each task
    # unless told to reuse them: a new PostgreSQL connection was ~8 ms of a ~45 ms report.
    # It now closes them only every this many tasks; between, Django's own rule applies
    # (``_close_old_connections`` below: CONN_MAX_AGE and the health check).
    CELERY_DB_REUSE_MAX=DB_REUSE_MAX,
)
app.autodiscover_tasks()


@signals.worker_init.connect
@signals.beat_init.connect
def _ensure_data_dir(**_) -> None:
    # a worker or beat started with ``celery -A portal`` makes its folders before it connects
    from portal.datadir import ensure_data_dir

    ensure_data_dir()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(sender=None, **_) -> None:
    # what Django does around each request: drop a connection that is broken, left in a
    # failed transaction or older than CONN_MAX_AGE; keep the rest (an eager task runs
    # inside its caller's transaction, which is not this hook's to end)
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@signals.worker_process_shutdown.connect
def _flush_events(**_) -> None:
    # Events the process's writer thread still holds are written before it goes
    from portal.event_writer import writer

    writer.flush(timeout=5.0)
