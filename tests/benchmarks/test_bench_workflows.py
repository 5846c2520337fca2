"""``manage.py bench workflows``: one JSON line with positive latencies after real processes ran
real WorkflowRuns; bad arguments are a CommandError; plus the pure parts (shape, the Workflow,
the line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db import connection

from benchmarks.runs import runtime_manifest
from benchmarks.workflows import (
    ARTIFACT_STORE,
    JOBS,
    RUNTIME,
    Step,
    WfrSample,
    result_line,
    runtime_shape,
    step_names,
    workflow_run_manifest,
)

ROOT = Path(__file__).resolve().parents[2]
LATENCIES = ("wfr_p50_ms", "wfr_p99_ms", "step_run_p50_ms", "overhead_per_step_ms")


# --- end to end -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.processes
def test_bench_workflows_prints_one_json_line_of_positive_numbers(tmp_path):
    """The real thing on the filesystem broker in a tmp data dir and the test database: the
    control worker, beat and two pods run two WorkflowRuns of four steps each."""
    data = tmp_path / "data"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_EAGER": "0",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_DATA_DIR": str(data),
        "PYTHONPATH": str(ROOT),
        "CELERY_BROKER_URL": "filesystem://localhost/",
    }
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "bench",
            "workflows",
            "--count",
            "2",
            "--startup-timeout",
            "60",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # progress goes to stderr, children to log files
    result = json.loads(lines[0])
    assert (result["count"], result["concurrency"], result["pods"]) == (2, 2, 2)
    assert (result["broker"], result["database"]) == ("filesystem", connection.vendor)
    assert result["steps_per_wfr"] == 4 and result["errors"] == 0
    # every WorkflowRun was reconciled through the work queue, and at least once per step
    assert result["reconciles_per_wfr"] >= 4, result
    for key in LATENCIES:
        assert isinstance(result[key], int | float) and result[key] > 0, (key, result)
    assert result["wfr_p50_ms"] <= result["wfr_p99_ms"]
    # a step's own time and its overhead fit in the WorkflowRun's wall time
    assert (
        4 * (result["step_run_p50_ms"] + result["overhead_per_step_ms"]) < 2 * result["wfr_p99_ms"]
    )
    assert "build/checkout: seen" in done.stderr and "stopped every child" in done.stderr

    from portal.models import Namespace
    from scheduling.models import Run, RuntimePod
    from workflows.models import WorkflowRun
    from workspaces.models import PersistentWorkspace

    # everything it made is gone again, rows and files
    namespace = "bench-workflows"
    assert not Namespace.objects.filter(name=namespace).exists()
    for model in (WorkflowRun, Run, RuntimePod, PersistentWorkspace):
        assert not model.objects.filter(namespace=namespace).exists(), model
    assert not (data / "pods" / namespace).exists()
    assert not (data / "artifact-volumes" / "bench-artifacts" / "namespaces" / namespace).exists()


# --- bad arguments ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--count"),
        (["--count", "many"], "--count"),
        (["--count", "0"], "--count must be at least 1"),
        (["--count", "2", "--concurrency", "0"], "--concurrency must be between 1 and --count"),
        (["--count", "2", "--concurrency", "3"], "--concurrency must be between 1 and --count"),
        (["--count", "2", "--warmup", "-1"], "--warmup must not be negative"),
        (["--count", "2", "--poll-ms", "0"], "--poll-ms"),
        (["--count", "2", "--timeout", "0"], "--timeout"),
    ],
)
def test_bad_arguments_are_a_command_error_before_anything_starts(argv, message):
    with pytest.raises(CommandError, match=message):
        call_command("bench", "workflows", *argv)


# --- the pure parts ---------------------------------------------------------------------


@pytest.mark.parametrize(("concurrency", "replicas"), [(1, 2), (2, 2), (3, 3), (10, 6)])
def test_the_runtime_has_ceil_c_half_plus_one_pods_of_four(concurrency, replicas):
    assert runtime_shape(concurrency) == (replicas, 4)
    spec = runtime_manifest(*runtime_shape(concurrency), ARTIFACT_STORE)["spec"]
    assert spec["artifactStore"] == {
        "driver": "filesystem",
        "filesystem": {"volumeClaimName": "bench-artifacts"},
    }
    assert "artifactStore" not in runtime_manifest(1, 1)["spec"]  # bench runs' is unchanged


def test_the_workflow_is_the_demos_on_the_bench_runtime():
    demo = yaml.safe_load((ROOT / "examples" / "50-workflow-ci-data-sharing-demo.yaml").read_text())
    expected = {name: {**job, "runs-on": RUNTIME} for name, job in demo["spec"]["jobs"].items()}
    assert expected == JOBS
    manifest = workflow_run_manifest("wf-00001")
    assert manifest["kind"] == "WorkflowRun" and manifest["metadata"] == {"name": "wf-00001"}
    assert manifest["spec"] == {"jobs": JOBS, "inputs": {}}
    assert step_names("wf-00001") == [
        "wf-00001-build-checkout",
        "wf-00001-build-test",
        "wf-00001-build-package",
        "wf-00001-deploy-verify-artifact",
    ]


def test_a_steps_own_time_is_running_to_terminal_first_seen():
    assert Step("a", {"Pending": 0.1, "Running": 0.3, "Succeeded": 0.35}).own == pytest.approx(0.05)
    assert Step("b", {"Pending": 0.1, "Succeeded": 0.2}).own == 0.0  # Running never seen
    assert Step("c", {"Pending": 0.1, "Running": 0.2}).own == 0.0  # not ended
    assert Step("d", {"Scheduled": 0.2, "Running": 0.3, "Failed": 0.5}).created == 0.2


def _sample(index: int, seconds: float, own: list[float], error: str = "") -> WfrSample:
    steps = [Step(f"s{i}", {"Running": 0.0, "Succeeded": o}) for i, o in enumerate(own)]
    return WfrSample(index, seconds=seconds, error=error, steps=steps)


def test_the_json_line_has_the_figures_and_leaves_failures_out():
    samples = [
        _sample(0, 1.0, [0.01, 0.02, 0.03, 0.04]),  # overhead (1.0 - 0.1) / 4 = 225 ms
        _sample(1, 2.0, [0.05, 0.05, 0.05, 0.05]),  # (2.0 - 0.2) / 4 = 450 ms
        _sample(2, 0.0, [], error="WorkflowRun wf-00002 ended Failed: job build failed"),
    ]
    result = result_line(
        count=3,
        concurrency=3,
        samples=samples,
        wall_seconds=2.0,
        broker="redis",
        database="postgresql",
        pods=3,
    )
    assert list(result) == [
        "count",
        "concurrency",
        "broker",
        "database",
        "pods",
        "wfr_p50_ms",
        "wfr_p99_ms",
        "wfr_per_s",
        "steps_per_wfr",
        "step_run_p50_ms",
        "overhead_per_step_ms",
        "errors",
    ]
    assert (result["wfr_p50_ms"], result["wfr_p99_ms"]) == (1000.0, 2000.0)
    assert result["wfr_per_s"] == 1.0 and result["steps_per_wfr"] == 4
    assert result["step_run_p50_ms"] == 40.0  # the 4th of 10, 20, 30, 40, 50, 50, 50, 50
    assert result["overhead_per_step_ms"] == 225.0 and result["errors"] == 1
