"""``manage.py bench invoke``: function Runs made Ready on a real python Runtime Pod and invoked
through the gateway of up's HTTPS web command, one JSON line of positive figures; plus its
argument checks."""

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
def test_bench_invoke_prints_one_json_line_of_real_invocations(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_EAGER": "0",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
        "CELERY_BROKER_URL": "filesystem://localhost/",
    }
    argv = ["bench", "invoke", "--count", "40", "--concurrency", "2", "--warmup", "5"]
    done = subprocess.run(
        [sys.executable, "manage.py", *argv, "--web-workers", "1", "--startup-timeout", "60"],
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
    assert result["errors"] == 0
    assert 0 < result["ready_p50_ms"] <= result["ready_max_ms"]
    for measure in ("c1", "c2"):
        line = result[measure]
        assert (line["count"], line["errors"]) == (40, 0)
        assert 0 < line["p50_ms"] <= line["p99_ms"] and line["per_second"] > 0
    assert result["released_ms"] > 0 and result["bare_call_us"] > 0


@pytest.mark.parametrize("argv", [["--count", "0"], ["--concurrency", "0"]])
def test_bench_invoke_refuses_nothing_to_do(argv):
    with pytest.raises(CommandError, match="--count and --concurrency must be at least 1"):
        call_command("bench", "invoke", *argv)
