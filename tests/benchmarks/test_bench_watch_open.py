"""``manage.py bench watch-open``: one JSON line after real watches opened against up's web
command; plus the pure parts (arguments, the phases the probes fall in)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from benchmarks.http_clients import Watch
from benchmarks.watch_open import WatchOpenOptions, _report

ROOT = Path(__file__).resolve().parents[2]
PHASES = ("before", "during", "open")


@pytest.mark.django_db(transaction=True)
@pytest.mark.processes
def test_bench_watch_open_prints_one_json_line(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
    }
    argv = ["--watches", "20", "--objects", "5", "--workers", "1", "--openings", "2"]
    done = subprocess.run(
        [sys.executable, "manage.py", "bench", "watch-open", *argv, "--baseline", "0.5"],
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
    assert (result["watches"], result["objects"], result["workers"]) == (20, 5, 1)
    assert (result["watch_openings"], result["database"]) == (2, connection.vendor)
    assert (result["opened"], result["events_lost"], result["initial_incomplete"]) == (20, 0, 0)
    assert result["errors"] == [] and result["open_all_s"] > 0
    for phase in ("before", "open"):
        assert result[phase]["requests"] > 0 and result[phase]["failed"] == 0, result
        assert 0 < result[phase]["p50_ms"] <= result[phase]["p99_ms"] <= result[phase]["max_ms"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--watches"),
        (["--watches", "0"], "--watches and --objects must be at least 1"),
        (["--watches", "2", "--objects", "0"], "--watches and --objects must be at least 1"),
    ],
)
def test_bad_arguments_are_a_command_error_before_anything_starts(argv, message):
    with pytest.raises(CommandError, match=message):
        call_command("bench", "watch-open", *argv)


def test_each_probe_counts_in_the_phase_it_overlapped():
    """Before: answered before the first watch was asked for; during: overlapping the
    openings; open: sent once all were open."""
    samples = [
        (0.0, 0.5, 200),  # before
        (9.0, 0.5, 200),  # before, answered just before the start
        (9.8, 0.4, 200),  # sent before, answered during: waited on the openings
        (12.0, 3.0, 200),  # during
        (19.9, 0.2, 500),  # during, failed
        (20.0, 0.1, 200),  # open
    ]
    opened = [Watch(marker=b"m", opened=0.5, saw_marker=True, initial=3) for _ in range(3)]
    missed = Watch(marker=b"m", opened=1.0, initial=2)  # lost the event, short initial list
    refused = Watch(marker=b"m", error="HTTP/1.1 429 Too Many Requests")
    result = _report(
        WatchOpenOptions(watches=5, objects=3, openings=4),
        [*opened, missed, refused],
        samples,
        {"start": 10.0, "opened": 20.0},
    )
    assert [result[phase]["requests"] for phase in PHASES] == [2, 3, 1]
    assert result["during"]["failed"] == 1
    assert result["during"]["max_ms"] == 3000.0
    assert (result["opened"], result["open_all_s"], result["open_p99_s"]) == (4, 10.0, 1.0)
    # a watch that never opened saw nothing: it counts as lost too
    assert (result["events_lost"], result["initial_incomplete"]) == (2, 1)
    assert result["errors"] == ["HTTP/1.1 429 Too Many Requests"]
    assert result["watch_openings"] == 4
