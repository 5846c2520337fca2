"""Opening many watches at once does not stall other requests (issue 27): a real web process
(``manage.py up``'s web command, one worker so every request meets the openings) is asked for
hundreds of watches with initial lists at once, and ordinary GETs made while most of them are
still opening are answered in a small fraction of the time the openings take, not behind them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

from benchmarks.http_clients import Target, Watch, open_watch
from tests.helpers.waiting import free_port, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
WATCHES = 300
OBJECTS = 50
NAMESPACE = "opening"


@pytest.fixture
def web(tmp_path, admin_user):
    from rest_framework.authtoken.models import Token

    from portal.management.commands.up import web_command

    port = free_port()
    data = tmp_path / "data"
    data.mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_DATA_DIR": str(data),
        "PYTHONPATH": str(ROOT),
    }
    log_path = tmp_path / "web.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*web_command(port, "127.0.0.1", workers=1), "--backlog", "2048"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    target = Target(f"http://127.0.0.1:{port}", Token.objects.create(user=admin_user).key)
    try:
        assert wait_until(lambda: _answers(target), timeout=60), log_path.read_text()
        yield target
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(target: Target) -> bool:
    try:
        return requests.get(f"{target.url}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _configmaps() -> None:
    from portal.auth.identities import LOCAL_OPERATOR
    from portal.machinery import store
    from portal.machinery.admission import WriteContext
    from portal.machinery.registry import registry
    from portal.models import Namespace

    Namespace.objects.create(name=NAMESPACE, spec={"finalizers": []})
    kind = registry.get("", "v1", "configmaps")
    context = WriteContext(user=LOCAL_OPERATOR)
    for index in range(OBJECTS):
        manifest = {"metadata": {"name": f"cm-{index:03d}"}, "data": {"x": "y" * 200}}
        store.create(kind, manifest, namespace=NAMESPACE, context=context)


def _get_seconds(target: Target, path: str) -> float:
    started = time.monotonic()
    status, _ = target.call("GET", path)
    assert status == 200
    return time.monotonic() - started


def test_an_ordinary_get_is_answered_while_hundreds_of_watches_open(web):
    _configmaps()
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    one = f"{base}/cm-000"
    baseline = sorted(_get_seconds(web, one) for _ in range(10))[5]
    watches = [Watch() for _ in range(WATCHES)]
    gets: list[tuple[int, float]] = []  # (watches still opening when it was sent, seconds)

    def opening() -> int:
        return sum(w.opened is None and not w.error for w in watches)

    async def scenario() -> float:
        clock = time.monotonic()
        path = f"{base}?watch=true&timeoutSeconds=120"
        tasks = [asyncio.create_task(open_watch(web, path, w, clock)) for w in watches]
        await asyncio.sleep(0.3)  # every request sent
        while (pending := opening()) and time.monotonic() - clock < 120:
            gets.append((pending, await asyncio.to_thread(_get_seconds, web, one)))
        took = time.monotonic() - clock
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return took

    all_open = asyncio.run(scenario())
    assert [w.error for w in watches if w.error] == []
    assert all(w.initial == OBJECTS for w in watches)
    # the GETs met the openings: the first went out with most watches still opening
    assert gets and gets[0][0] >= WATCHES // 2, (gets, all_open)
    worst = max(seconds for _, seconds in gets)
    # queued behind the openings, the first GET waited nearly as long as they all took
    bound = max(0.15 * all_open, 20 * baseline)
    assert worst < bound, (worst, bound, baseline, all_open, gets)
