"""A Celery worker process keeps its database connection from one task to the next (Celery's
Django fixup would open a new one for every task), and still drops one Django would drop
around a request: too old, broken, or left in a failed transaction."""

from __future__ import annotations

import time

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection
from django.test import override_settings

from portal import celery

pytestmark = [pytest.mark.django_db(transaction=True)]


class Task:
    class request:  # noqa: N801 - the shape of a Celery task's request
        is_eager = False


def around_a_task(fixup: DjangoWorkerFixup) -> None:
    """What a worker process does before and after each task, in the order it does it."""
    fixup.on_task_prerun(Task)
    celery._close_old_connections(sender=Task)
    connection.ensure_connection()
    fixup.on_task_postrun(Task)
    celery._close_old_connections(sender=Task)


def test_a_worker_process_keeps_its_connection_across_tasks():
    fixup = DjangoWorkerFixup(celery.app)
    connection.ensure_connection()
    kept = connection.connection
    for _ in range(10):
        around_a_task(fixup)
    assert connection.connection is kept


def test_without_the_reuse_setting_the_fixup_would_open_one_per_task():
    # the behaviour the setting is there for: proves the test above can fail
    fixup = DjangoWorkerFixup(celery.app)
    fixup.db_reuse_max = None
    connection.ensure_connection()
    first = connection.connection
    around_a_task(fixup)
    assert connection.connection is not first


def test_a_connection_older_than_conn_max_age_is_dropped_between_tasks():
    fixup = DjangoWorkerFixup(celery.app)
    connection.ensure_connection()
    first = connection.connection
    connection.close_at = time.monotonic() - 1  # its CONN_MAX_AGE ran out
    around_a_task(fixup)
    assert connection.connection is not first


@override_settings(CELERY_TASK_ALWAYS_EAGER=True)
def test_an_eager_task_leaves_its_callers_connection_alone():
    class Eager:
        class request:  # noqa: N801
            is_eager = True

    connection.ensure_connection()
    first = connection.connection
    connection.close_at = time.monotonic() - 1
    celery._close_old_connections(sender=Eager)
    assert connection.connection is first
