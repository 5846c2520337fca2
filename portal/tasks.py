"""Celery entry points of the shared machinery: thin wrappers that load, call and re-enqueue."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from portal import task_names
from portal.machinery import gc, workqueue

log = logging.getLogger(__name__)


@shared_task(name=task_names.GARBAGE_COLLECT, ignore_result=True)
def garbage_collect(after_id: int = 0) -> dict:
    """The beat pass: one batch, then re-enqueue itself while work remains (resumable)."""
    batch = settings.KRUNTIMES_GC_BATCH_SIZE
    orphans, resume_after = gc.collect_orphans(after_id, batch)
    result = {"deleted": orphans.deleted}
    if after_id == 0:
        foreground = gc.release_foreground(batch)
        namespaces = gc.finalize_namespaces(batch)
        events = gc.expire_events(settings.KRUNTIMES_EVENT_TTL_SECONDS, batch)
        result.update(
            released=foreground.released + namespaces.released,
            deleted=orphans.deleted + foreground.deleted + namespaces.deleted,
            expired_events=events.deleted,
        )
    if resume_after is not None:
        garbage_collect.apply_async(args=(resume_after,), queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    return result


@shared_task(name=task_names.COLLECT_DEPENDENTS, ignore_result=True)
def collect_dependents(owner_uid: str) -> int:
    """The event path after an owner is deleted; the beat pass heals if this message is lost."""
    progress = gc.collect_dependents(owner_uid, settings.KRUNTIMES_GC_BATCH_SIZE)
    if progress.more:
        collect_dependents.apply_async(args=(owner_uid,), queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    return progress.deleted


@shared_task(name=task_names.RELEASE_FOREGROUND_OWNERS, ignore_result=True)
def release_foreground_owners() -> int:
    """Event path after a dependent is deleted: owners deleting in the foreground may go."""
    return gc.release_foreground(settings.KRUNTIMES_GC_BATCH_SIZE).released


@shared_task(name=task_names.COMPACT_WATCH_HISTORY, ignore_result=True)
def compact_watch_history() -> int:
    """The beat pass: drop watch history older than KRUNTIMES_WATCH_HISTORY_SECONDS (keeping
    the newest KRUNTIMES_WATCH_HISTORY_MIN_EVENTS); older watches get 410 and relist. One
    bounded batch, then re-enqueue itself while whole batches are due."""
    from portal.machinery import history

    batch = settings.KRUNTIMES_WATCH_COMPACT_BATCH
    removed = history.compact(
        settings.KRUNTIMES_WATCH_HISTORY_SECONDS,
        settings.KRUNTIMES_WATCH_HISTORY_MIN_EVENTS,
        limit=batch,
    )
    if removed >= batch:
        compact_watch_history.apply_async(queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    return removed


@shared_task(name=task_names.PROCESS_QUEUE, ignore_result=True)
def process_queue(queue: str) -> int:
    """Reconcile the due keys of a controller's work queue (``portal.machinery.workqueue``);
    again at once while a batch was full, and when the soonest failed key's backoff ends."""
    drained = workqueue.process(queue)
    if drained.reconciled or drained.failed:
        log.info(
            "work queue %s: reconciled %d, failed %d",
            queue,
            len(drained.reconciled),
            len(drained.failed),
        )
    if drained.more:
        process_queue.apply_async(args=(queue,), queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    if drained.retry_in is not None:
        process_queue.apply_async(
            args=(queue,), countdown=drained.retry_in, queue=settings.CELERY_TASK_DEFAULT_QUEUE
        )
    return len(drained.reconciled)
