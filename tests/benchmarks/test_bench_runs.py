"""``manage.py bench runs``: one JSON line with positive latencies after real processes ran
real Runs; plus the pure parts (shape, percentiles, the line, the log breakdown)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection

from benchmarks import tracelog
from benchmarks.measure import percentile
from benchmarks.runs import (
    Sample,
    Series,
    format_line,
    result_line,
    run_manifest,
    runtime_manifest,
    runtime_shape,
)

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {
    "count",
    "concurrency",
    "p50_ms",
    "p99_ms",
    "runs_per_s",
    "celery_p50_ms",
    "celery_p99_ms",
}


# --- end to end -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.processes
def test_bench_runs_prints_one_json_line_of_positive_numbers(tmp_path):
    """The real thing on the filesystem broker in a tmp data dir and the test database:
    ``manage.py bench runs`` starts the control worker, beat, the echo worker and a pod."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_EAGER": "0",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
        "CELERY_BROKER_URL": "filesystem://localhost/",
    }
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "bench",
            "runs",
            "--count",
            "3",
            "--concurrency",
            "1",
            "--warmup",
            "1",
            "--startup-timeout",
            "60",
            "--timeout",
            "20",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # progress goes to stderr, children to log files
    result = json.loads(lines[0])
    assert set(result) >= REQUIRED
    for key in REQUIRED - {"count", "concurrency"}:
        assert isinstance(result[key], int | float) and result[key] > 0, (key, result)
    assert (result["count"], result["concurrency"], result["pods"]) == (3, 1, 1)
    assert result["p50_ms"] <= result["p99_ms"]
    assert result["errors"] == 0
    assert (result["broker"], result["database"]) == ("filesystem", connection.vendor)
    assert "Succeeded seen after" in done.stderr and "stopped every child" in done.stderr

    from django.contrib.auth import get_user_model

    from portal.models import Namespace
    from scheduling.models import Run, RuntimePod

    # everything it made is gone again
    assert not Namespace.objects.filter(name="bench-runs").exists()
    assert not Run.objects.filter(namespace="bench-runs").exists()
    assert not RuntimePod.objects.filter(namespace="bench-runs").exists()
    assert not get_user_model().objects.filter(username="bench-runs").exists()


@pytest.mark.processes
def test_an_unreachable_broker_is_a_one_line_error(tmp_path):
    env = {
        **os.environ,
        "KRUNTIMES_DATA_DIR": str(tmp_path / "data"),
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "bench", "runs", "--count", "1", "--concurrency", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("CommandError: the Celery broker") and "CELERY_BROKER_URL" in error


# --- the pure parts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("concurrency", "replicas", "capacity"),
    [(1, 1, 1), (4, 1, 4), (5, 2, 3), (8, 2, 4), (9, 3, 3), (16, 4, 4)],
)
def test_the_runtime_holds_the_concurrency_at_once(concurrency, replicas, capacity):
    assert runtime_shape(concurrency) == (replicas, capacity)
    assert replicas * capacity >= concurrency
    spec = runtime_manifest(replicas, capacity)["spec"]
    assert spec["replicas"] == replicas and spec["capacity"]["resources"]["runs"] == capacity


def test_the_run_manifest_is_an_echo_task():
    manifest = run_manifest("run-00001")
    assert manifest["metadata"]["name"] == "run-00001"
    assert manifest["spec"] == {
        "runtime": "bench",
        "source": {"inline": "echo hi"},
        "mode": {"task": {}},
    }


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 201)]
    assert percentile(values, 0.5) == 100.0
    assert percentile(values, 0.99) == 198.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0


def _series(ms: list[float], wall: float, errors: int = 0, lost: int = 0) -> Series:
    samples = [Sample(i, seconds=v / 1000) for i, v in enumerate(ms)]
    samples += [Sample(len(samples) + i, error="Run x ended Failed") for i in range(errors)]
    samples += [Sample(len(samples) + i, error="no reply", lost=True) for i in range(lost)]
    return Series(samples, wall)


def test_the_json_line_has_the_keys_in_order_and_the_overhead():
    runs = _series([100.0, 120.0, 140.0, 400.0], wall=0.5)
    celery = _series([40.0, 50.0, 60.0, 70.0], wall=0.1, lost=1)
    result = result_line(
        count=4,
        concurrency=2,
        runs=runs,
        celery=celery,
        broker="redis",
        database="postgresql",
        pods=1,
    )
    assert list(result)[:7] == [
        "count",
        "concurrency",
        "p50_ms",
        "p99_ms",
        "runs_per_s",
        "celery_p50_ms",
        "celery_p99_ms",
    ]
    assert result["p50_ms"] == 120.0 and result["p99_ms"] == 400.0
    assert result["celery_p50_ms"] == 50.0 and result["celery_p99_ms"] == 70.0
    assert result["runs_per_s"] == 8.0  # 4 Runs in 0.5 s
    assert result["overhead_x"] == 2.4
    assert (result["errors"], result["echo_lost"]) == (0, 1)
    line = format_line(result)
    assert "\n" not in line and json.loads(line) == result


def test_failed_runs_are_errors_and_left_out_of_the_percentiles():
    runs = _series([100.0], wall=1.0, errors=2)
    result = result_line(count=3, concurrency=1, runs=runs, celery=_series([50.0], 1.0))
    assert result["errors"] == 2 and result["p50_ms"] == 100.0 and result["runs_per_s"] == 1.0


def test_the_log_breakdown_counts_the_tasks_of_the_window():
    lines = [
        "2026-01-01 10:00:00,000 INFO celery.worker.strategy: Task scheduling.schedule[a1] "
        "received",
        "2026-01-01 10:00:00,020 INFO celery.app.trace: Task scheduling.schedule[a1] "
        "succeeded in 0.015s: 1",
        "[2026-01-01 10:00:01,000: INFO/MainProcess] Task runtimed.execute_run[b2] received",
        "[2026-01-01 10:00:01,030: INFO/MainProcess] Task runtimed.execute_run[b2] succeeded "
        "in 0.025s: None",
        "2026-01-01 10:00:02,000 ERROR celery.app.trace: Task scheduling.schedule[c3] raised "
        "unexpected: OperationalError('database is locked')",
        "2026-01-01 11:00:00,000 INFO celery.app.trace: Task scheduling.schedule[d4] "
        "succeeded in 0.5s: 0",  # outside the window
    ]
    stats = tracelog.task_stats(lines, datetime(2026, 1, 1, 10), datetime(2026, 1, 1, 10, 1))
    assert set(stats) == {"scheduling.schedule", "runtimed.execute_run"}
    schedule = stats["scheduling.schedule"]
    assert schedule.runtimes_ms == [15.0] and schedule.in_worker_ms == [20.0]
    assert schedule.failed == 1
    assert stats["runtimed.execute_run"].in_worker_ms == [30.0]
    described = tracelog.describe("control-worker", stats, 60.0)
    assert "busy 0.04 s of 60.00 s" in described[0]
    assert any("1 FAILED" in line for line in described)


def test_the_log_counts_the_keys_each_work_queue_reconciled_in_the_window():
    lines = [
        "2026-01-01 10:00:00,000 INFO portal.tasks: work queue workflows: reconciled 2, failed 0",
        "[2026-01-01 10:00:01,000: INFO/ForkPoolWorker-1] work queue workflows: reconciled 1, "
        "failed 1",
        "2026-01-01 10:00:02,000 INFO portal.tasks: work queue workspaces: reconciled 3, failed 0",
        "2026-01-01 11:00:00,000 INFO portal.tasks: work queue workflows: reconciled 9, failed 0",
    ]
    counts = tracelog.reconciles(lines, datetime(2026, 1, 1, 10), datetime(2026, 1, 1, 10, 1))
    assert counts == {"workflows": 4, "workspaces": 3}
