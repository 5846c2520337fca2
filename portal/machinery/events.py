"""Start reconcilers after a write commits, without ever failing the write.

Tasks are sent by name (``portal.task_names``, ``scheduling.task_names``), so the modules that
wake reconcilers never import the modules that define them. A send that fails (broker down)
is logged and dropped: every reconciler also runs from a beat pass, so a lost event only
delays work.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, current_app
from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


def _send(task: Task[Any, Any], args: tuple[Any, ...], options: dict[str, Any]) -> None:
    try:
        task.apply_async(args=args, **options)
    except Exception:  # noqa: BLE001 - the beat pass heals a lost event
        log.warning(
            "could not enqueue %s%r; the next beat pass will pick it up",
            getattr(task, "name", task),
            args,
            exc_info=True,
        )


def task_named(name: str) -> Task[Any, Any]:
    """The registered task of that name (each app's ready() imports its tasks); a KeyError for
    a name nobody registered is a bug, raised at once rather than logged at send time."""
    return current_app.tasks[name]


def send_on_commit(task: str | Task[Any, Any], *args: Any, **options: Any) -> None:
    """After the commit, send ``task`` (a registered task's name, or the task) with ``args``."""
    task = task_named(task) if isinstance(task, str) else task
    options.setdefault("queue", settings.CELERY_TASK_DEFAULT_QUEUE)
    transaction.on_commit(lambda: _send(task, args, options))
