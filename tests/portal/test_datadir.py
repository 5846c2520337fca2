"""Where the code lives and what importing it does: settings create no file, the entry points
make the data directory, the embedded default's secret key is made once with mode 0600, and the
benchmarks are a checkout's app, not the wheel's."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from django.conf import settings
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, data: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "KRUNTIMES_DATA_DIR": str(data),
        "SECRET_KEY": "",
        "DATABASE_URL": f"sqlite:///{data}/db.sqlite3",
        "CELERY_BROKER_URL": "filesystem://localhost/",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


@pytest.mark.processes
def test_importing_the_settings_and_setting_django_up_creates_no_file(tmp_path):
    data = tmp_path / "data"
    python("import django; django.setup(); from django.conf import settings; settings.DEBUG", data)
    assert not data.exists()


@pytest.mark.processes
def test_the_entry_point_makes_the_data_directory_and_the_broker_folders(tmp_path):
    data = tmp_path / "data"
    python("import sys; sys.argv = ['manage.py', 'check']; import manage; manage.main()", data)
    assert sorted(p.name for p in data.iterdir()) == ["broker", "static"]
    assert sorted(p.name for p in (data / "broker").iterdir()) == [
        "control",
        "processed",
        "queue",
    ]


@pytest.mark.processes
def test_the_secret_key_is_made_on_first_use_with_mode_0600_and_kept(tmp_path):
    data = tmp_path / "data"
    sign = "import django; django.setup(); from django.core import signing; "
    first = python(sign + "print(signing.dumps('hello'))", data).stdout.strip()
    key = data / "secret_key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_text().strip()) >= 50
    # a second process reads the same key: what the first signed, it verifies
    second = python(sign + f"print(signing.loads({first!r}))", data).stdout.strip()
    assert second == "hello"
    assert [p.name for p in data.iterdir()] == ["secret_key"]


@pytest.mark.processes
def test_a_set_secret_key_writes_no_key_file(tmp_path):
    data = tmp_path / "data"
    python(
        "import django; django.setup(); from django.core import signing; signing.dumps(1)",
        data,
        SECRET_KEY="x" * 60,
    )
    assert not data.exists()


def test_the_wheel_ships_no_benchmarks_but_a_checkout_installs_them():
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = find_packages(str(ROOT), include=find["packages"]["find"]["include"])
    assert "scheduling" in shipped and "portal.machinery" in shipped
    assert not [p for p in shipped if p.split(".")[0] in ("benchmarks", "tests")]
    assert "benchmarks" in settings.INSTALLED_APPS


def test_each_command_lives_beside_the_app_it_serves():
    from django.core.management import get_commands

    commands = get_commands()
    assert commands["bench"] == "benchmarks"
    assert commands["runtimed"] == "scheduling"
    assert commands["up"] == "portal"


def test_threads_of_one_process_making_the_key_at_once_agree(tmp_path):
    import threading

    from portal.datadir import _read_or_make_key

    path = str(tmp_path / "secret_key")
    keys, errors = [], []

    def make():
        try:
            keys.append(_read_or_make_key.__wrapped__(path))
        except Exception as exc:  # the race this guards against raised FileNotFoundError
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(keys)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret_key"]


def test_the_up_lock_is_held_once_and_names_its_holder(tmp_path):
    from portal import datadir

    lock = datadir.lock_for_up(tmp_path)
    try:
        with pytest.raises(datadir.DataDirBusy) as refused:
            datadir.lock_for_up(tmp_path)
        assert f"(pid {os.getpid()})" in str(refused.value)
    finally:
        lock.release()
    datadir.lock_for_up(tmp_path).release()  # free again once released


def test_a_second_up_on_the_data_directory_is_refused_at_once(tmp_path):
    """Two ``up`` on one data directory would take each other's Runtime Pods (same names,
    same disks) for their own: the second exits non-zero at once, naming the first."""
    import time

    from portal import datadir

    data = tmp_path / "data"
    lock = datadir.lock_for_up(data)  # the first ``up``
    try:
        started = time.monotonic()
        second = subprocess.run(
            [sys.executable, "manage.py", "up", "--port", "1"],
            cwd=ROOT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "portal.settings",
                "KRUNTIMES_DATA_DIR": str(data),
                "SECRET_KEY": "",
                "DATABASE_URL": f"sqlite:///{data}/db.sqlite3",
                "CELERY_BROKER_URL": "filesystem://localhost/",
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
        took = time.monotonic() - started
    finally:
        lock.release()
    assert second.returncode != 0
    message = (
        f"another `manage.py up` (pid {os.getpid()}) is running on the data directory {data}; "
        f"stop it first (its lock: {data / 'up.lock'})"
    )
    assert message in second.stderr, second.stderr
    assert "starting" not in second.stderr  # nothing was started
    print(f"second up refused in {took:.2f}s: {second.stderr.strip()}")
