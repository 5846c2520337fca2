"""Celery entry points of the shared machinery: thin wrappers that load, call and re-enqueue."""

from __future__ import annotations

import logging
import uuid

from celery import shared_task
from django.conf import settings

from portal import task_names
from portal.machinery import gc, gc_queue, workqueue

log = logging.getLogger(__name__)


@shared_task(name=task_names.GARBAGE_COLLECT, ignore_result=True)
def garbage_collect(after_id: int = 0) -> dict:
    """Beat: the garbage collector's resync adds the key of every gone owner (one batch of
    owner links, then again while links remain) and of every owner deleting in the
    foreground; terminating Namespaces and expired Events are handled here."""
    batch = settings.KRUNTIMES_GC_BATCH_SIZE
    gone, resume_after = gc.gone_owners(after_id, batch)
    result = {"owners": gc_queue.request_owners(sorted(gone))}
    if after_id == 0:
        result["owners"] += gc_queue.request_owners(gc.foreground_owners(batch))
        namespaces = gc.finalize_namespaces(batch)
        events = gc.expire_events(settings.KRUNTIMES_EVENT_TTL_SECONDS, batch)
        result.update(
            released=namespaces.released,
            deleted=namespaces.deleted,
            expired_events=events.deleted,
        )
    if resume_after is not None:
        garbage_collect.apply_async(args=(resume_after,), queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    return result


def collect_owner_key(key: str) -> workqueue.Requeue | None:
    """A key of the gc queue: one owner's dependents collected, a batch at a time (requeued
    at once while more remain), and the owner released if it waited for them."""
    try:
        owner_uid = uuid.UUID(key)
    except ValueError:
        log.warning("gc: dropping the key %r, which is no UID", key)
        return None
    progress = gc.collect_owner(owner_uid, settings.KRUNTIMES_GC_BATCH_SIZE)
    return workqueue.Requeue(after=0) if progress.more else None


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
