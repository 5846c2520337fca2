"""``manage.py bench gateway``: one JSON line after real invocations through up's web command
and the function gateway to an echo FunctionRuntime server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
@pytest.mark.processes
def test_bench_gateway_prints_one_json_line(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "bench", "gateway", "--count", "50", "--concurrency", "4"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    result = json.loads(lines[0])
    assert (result["count"], result["concurrency"], result["web_workers"]) == (50, 4, 1)
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]
    assert result["c4_invokes_per_s"] > 0 and 0 < result["c4_p50_ms"] <= result["c4_p99_ms"]
    assert 0 < result["bare_grpc_p50_ms"] <= result["bare_grpc_p99_ms"]


@pytest.mark.parametrize("argv", [["--count", "0"], ["--concurrency", "0"]])
def test_bench_gateway_refuses_nothing_to_do(argv):
    with pytest.raises(CommandError, match="--count and --concurrency must be at least 1"):
        call_command("bench", "gateway", *argv)
