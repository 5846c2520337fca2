"""Fault probes: while 100 Runs with a retry policy are in flight, ``manage.py up`` is stopped
(SIGTERM) and started again, or its Redis is down for 20 s. Each step appends to a ledger
when it starts and when it is done, so the test counts what really happened:

- duplicates: an attempt that started after an attempt of the same Run was done;
- false failures: a Run whose step was done but that did not end Succeeded;
- stuck: a Run not ended when everything is back.

Every count must be 0.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import defaultdict

import pytest

from tests.helpers.live import API, RUNTIME
from tests.helpers.waiting import free_port, wait_until

from .conftest import api_session, up_process

pytestmark = pytest.mark.django_db(transaction=True)
RUNS = 100
TERMINAL = {"Succeeded", "Failed", "Timeout", "Cancelled"}


def step(ledger) -> str:
    return (
        f'echo "$KRUNTIME_RUN_NAME $KRUNTIME_ATTEMPT start" >> {ledger}\n'
        "sleep 0.$((RANDOM % 5 + 2))\n"
        f'echo "$KRUNTIME_RUN_NAME $KRUNTIME_ATTEMPT done" >> {ledger}\n'
    )


def create_runs(session, base, ledger) -> None:
    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "replicas": 4}}
    assert session.post(f"{base}{API}/runtimes", json=runtime, timeout=10).status_code == 201
    for index in range(RUNS):
        manifest = {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Run",
            "metadata": {"name": f"f{index:03d}"},
            "spec": {
                "runtime": "bash",
                "source": {"inline": step(ledger)},
                "mode": {"task": {}},
                "retryPolicy": {"maxAttempts": 3, "backoff": "1s"},
            },
        }
        response = session.post(f"{base}{API}/runs", json=manifest, timeout=10)
        assert response.status_code == 201, response.text


def done_lines(ledger) -> int:
    return ledger.read_text().count(" done\n") if ledger.exists() else 0


def phases() -> dict[str, tuple[str, int, str]]:
    from scheduling.models import Run

    return {
        run.name: (run.phase, run.attempt, (run.status or {}).get("reason", ""))
        for run in Run.objects.filter(name__startswith="f")
    }


def verdict(ledger) -> dict[str, int]:
    started, done = defaultdict(set), defaultdict(set)
    for line in ledger.read_text().splitlines():
        name, attempt, what = line.split()
        (done if what == "done" else started)[name].add(int(attempt))
    final = phases()
    duplicates = sum(
        1 for name, attempts in done.items() if any(a > min(attempts) for a in started[name])
    )
    false_failures = sum(1 for name in done if final[name][0] != "Succeeded")
    stuck = sum(1 for phase, _, _ in final.values() if phase not in TERMINAL)
    figures = {
        "runs": len(final),
        "done": len(done),
        "duplicates": duplicates,
        "false_failures": false_failures,
        "stuck": stuck,
        "retried": sum(1 for _, attempt, _ in final.values() if attempt > 1),
        "failed": sum(1 for phase, _, _ in final.values() if phase != "Succeeded"),
    }
    print(
        "fault probe:",
        figures,
        "reasons:",
        sorted({reason for phase, _, reason in final.values() if phase != "Succeeded"}),
    )
    return figures


def all_ended() -> bool:
    return all(phase in TERMINAL for phase, _, _ in phases().values())


@pytest.fixture
def namespace():
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})


def test_a_restart_mid_flight_runs_nothing_twice_and_fails_nothing_done(
    broker, tmp_path, admin_user, namespace
):
    ledger = tmp_path / "ledger"
    session = api_session(admin_user)
    up = up_process(broker, tmp_path, {"KRUNTIMES_POD_TERMINATION_GRACE_SECONDS": "15"})
    try:
        up.start(session)
        create_runs(session, up.base, ledger)
        assert wait_until(lambda: done_lines(ledger) >= 30, timeout=120)
        stopped_in = up.stop(timeout=60)
        at_stop = done_lines(ledger)
        up.start(session)
        assert wait_until(all_ended, timeout=240), phases()
    finally:
        up.stop()
        print(up.log_path.read_text(errors="replace")[-4000:])
    figures = verdict(ledger)
    print(f"stopped in {stopped_in:.1f}s with {at_stop} steps done")
    assert (figures["duplicates"], figures["false_failures"], figures["stuck"]) == (0, 0, 0)
    assert figures["runs"] == RUNS


@pytest.fixture
def private_redis(tmp_path):
    """A Redis of the test's own, which it may stop and start again (keeping its data)."""
    server = shutil.which("redis-server")
    if server is None:
        from tests.helpers.services import need_service

        need_service("redis-server", "not installed")
    port = free_port()
    data = tmp_path / "redis"
    data.mkdir()
    argv = [
        server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data),
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]

    class PrivateRedis:
        url = f"redis://127.0.0.1:{port}/0"
        process: subprocess.Popen | None = None

        def start(self) -> None:
            self.process = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            assert wait_until(self.answers, timeout=10), "redis did not start"

        def stop(self) -> None:
            if self.process is not None:
                self.process.terminate()  # appendonly: what it acknowledged survives
                self.process.wait(10)
                self.process = None

        def answers(self) -> bool:
            import redis

            try:
                return redis.Redis.from_url(self.url, socket_connect_timeout=1).ping()
            except Exception:  # noqa: BLE001
                return False

    instance = PrivateRedis()
    instance.start()
    yield instance
    instance.stop()


def test_a_20s_redis_outage_runs_nothing_twice_and_fails_nothing_done(
    private_redis, tmp_path, admin_user, namespace
):
    ledger = tmp_path / "ledger"
    data = tmp_path / "data"
    data.mkdir()
    session = api_session(admin_user)
    up = up_process(
        {"CELERY_BROKER_URL": private_redis.url, "KRUNTIMES_DATA_DIR": str(data)}, tmp_path, {}
    )
    try:
        up.start(session)
        create_runs(session, up.base, ledger)
        assert wait_until(lambda: done_lines(ledger) >= 20, timeout=120)
        private_redis.stop()
        down = time.monotonic()
        time.sleep(20)
        private_redis.start()
        print(f"redis was down {time.monotonic() - down:.1f}s")
        assert wait_until(all_ended, timeout=240), phases()
    finally:
        up.stop()
        print(up.log_path.read_text(errors="replace")[-4000:])
    figures = verdict(ledger)
    assert (figures["duplicates"], figures["false_failures"], figures["stuck"]) == (0, 0, 0)
    assert figures["runs"] == RUNS
