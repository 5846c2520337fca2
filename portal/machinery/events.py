"""Start reconcilers after a write commits, without ever failing the write.

A send that fails (broker down) is logged and dropped: every reconciler also runs from a
beat pass, so a lost event only delays work.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


def _send(task, args: tuple, options: dict) -> None:
    try:
        task.apply_async(args=args, **options)
    except Exception:  # noqa: BLE001 - the beat pass heals a lost event
        log.warning(
            "could not enqueue %s%r; the next beat pass will pick it up",
            getattr(task, "name", task),
            args,
            exc_info=True,
        )


def send_on_commit(task, *args, **options) -> None:
    options.setdefault("queue", settings.CELERY_TASK_DEFAULT_QUEUE)
    transaction.on_commit(lambda: _send(task, args, options))
