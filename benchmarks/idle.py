"""``bench idle --finished N --pending M``: what every beat pass costs on a database holding N
finished Runs (none due for their TTL yet) and M pending Runs that cannot be placed (their
Runtime has no pods). Each pass of ``CELERY_BEAT_SCHEDULE`` (and one scheduling pass, once
the Pending messages are written) is run in this process several times; the median ms and
its statement count per pass."""

from __future__ import annotations

import statistics
import time
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from scheduling.models import Run, RunPhase
from scheduling.scheduler import default_framework, run_pass

from . import bulk
from . import workload as setup
from .measure import QueryCounter
from .workload import Log

NAMESPACE = "bench-idle"
REPEATS = 5


def _populate(finished: int, pending: int, log: Log) -> None:
    work = setup.Workload(NAMESPACE, runs=1, pods=1)
    Run.objects.filter(namespace=NAMESPACE)._raw_delete(Run.objects.db)
    setup.delete_namespace(NAMESPACE)
    setup.create(setup.Workload(NAMESPACE, runs=1, pods=1), log)
    from scheduling import pod_writer
    from scheduling.models import RuntimePod

    # nothing can be placed
    pod_writer.delete_where(RuntimePod.objects.filter(namespace=NAMESPACE))
    Run.objects.filter(namespace=NAMESPACE).delete()
    template = work._template(0)
    now = timezone.now()
    done_at = (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def finished_run(run: Run, i: int) -> None:
        run.name = f"done-{i:07d}"
        run.spec = {**template.spec, "ttlSecondsAfterFinished": 86400}
        run.status = {"phase": RunPhase.SUCCEEDED, "completionTime": done_at}

    def pending_run(run: Run, i: int) -> None:
        run.name = f"wait-{i:06d}"

    bulk.create_runs(template, finished, finished_run, log, created=now - timedelta(days=1))
    bulk.create_runs(template, pending, pending_run, log, created=now, what="pending Runs")
    bulk.analyze(log)


def _time(call) -> tuple[float, int]:
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        started = time.perf_counter()
        call()
        seconds = time.perf_counter() - started
    return seconds * 1000, counter.count


def _passes() -> dict:
    from portal.celery import app

    passes = {}
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        task = app.tasks[entry["task"]]
        passes[name] = lambda task=task, entry=entry: task(
            *entry.get("args", ()), **entry.get("kwargs", {})
        )
    framework = default_framework()
    passes["scheduling-pass"] = lambda: run_pass(framework, timezone.now())
    return passes


def run_idle_bench(finished: int, pending: int, log: Log, keep: bool = False) -> dict:
    started = time.perf_counter()
    _populate(finished, pending, log)
    log(f"setup took {time.perf_counter() - started:.1f} s")
    try:
        passes = _passes()
        for call in passes.values():  # warm: the first scheduling pass writes the messages
            call()
        result = {}
        for name, call in passes.items():
            samples = [_time(call) for _ in range(REPEATS)]
            ms = statistics.median(s[0] for s in samples)
            result[name] = {"ms": round(ms, 2), "queries": max(s[1] for s in samples)}
            log(f"{name}: {result[name]}")
    finally:
        if not keep:
            Run.objects.filter(namespace=NAMESPACE)._raw_delete(Run.objects.db)
            setup.delete_namespace(NAMESPACE)
    return {"passes": result, "finished": finished, "pending": pending}
