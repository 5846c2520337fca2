"""Real Celery worker and beat processes against the test database and a real broker."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection

from tests.conftest import need_service

ROOT = Path(__file__).resolve().parents[2]


def redis_url() -> str:
    url = os.environ.get("CELERY_BROKER_URL", "")
    return url if url.startswith("redis://") else "redis://127.0.0.1:6379/15"


def require_redis(url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001
        need_service("Redis", exc)


@pytest.fixture(params=["filesystem", "redis"])
def broker(request, tmp_path) -> dict[str, str]:
    """Environment selecting a broker: the embedded filesystem transport, or real Redis."""
    if request.param == "redis":
        url = redis_url()
        require_redis(url)
        import redis

        redis.Redis.from_url(url).delete("control")  # no leftovers from an earlier run
        return {"CELERY_BROKER_URL": url}
    data = tmp_path / "data"
    data.mkdir()
    return {"CELERY_BROKER_URL": "filesystem://localhost/", "KRUNTIMES_DATA_DIR": str(data)}


class Processes:
    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.running: list[subprocess.Popen] = []

    def start(self, *argv: str) -> subprocess.Popen:
        log = open(self.logs / f"{argv[0]}-{len(self.running)}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "portal", *argv],
                                   cwd=ROOT, env=self.env, start_new_session=True,
                                   stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.running.append(process)
        return process

    def output(self) -> str:
        """Every process's log, for a failing test's report."""
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
                         for p in sorted(self.logs.glob("*.log")))

    def worker(self) -> subprocess.Popen:
        return self.start("worker", "-Q", "control", "--pool", "solo", "--loglevel", "INFO",
                          "-n", f"test-{os.getpid()}-{len(self.running)}@%h")

    def beat(self, schedule_dir: Path) -> subprocess.Popen:
        return self.start("beat", "--loglevel", "INFO", "--scheduler",
                          "django_celery_beat.schedulers:DatabaseScheduler",
                          "--pidfile", str(schedule_dir / "beat.pid"))

    def stop(self) -> None:
        for process in self.running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.running:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def processes(request, broker, transactional_db, tmp_path):
    env = {**os.environ, **broker, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "KRUNTIMES_TEST_EAGER": "0", "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
           "KRUNTIMES_RECONCILE_INTERVAL_SECONDS": "1", "PYTHONPATH": str(ROOT)}
    if "KRUNTIMES_DATA_DIR" not in broker:
        env["KRUNTIMES_DATA_DIR"] = str(settings.DATA_DIR)
    from portal.models import Namespace

    # transactional tests flush tables, the migration's "default" namespace included
    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": ["kubernetes"]}})
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = Processes(env, logs)
    yield procs
    procs.stop()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print(procs.output())


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def up_env() -> dict[str, str]:
    """Extra environment for ``manage.py up`` (a test module may override this fixture)."""
    return {}


@pytest.fixture
def portal_up(broker, tmp_path, admin_user, up_env):
    from rest_framework.authtoken.models import Token

    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})
    token = Token.objects.create(user=admin_user).key
    port = free_port()
    env = {**os.environ, **broker, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "KRUNTIMES_TEST_EAGER": "0", "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
           "PYTHONPATH": str(ROOT), "KRUNTIMES_DATA_DIR": broker.get(
               "KRUNTIMES_DATA_DIR", str(tmp_path / "data")),
           # a short stop: tests end with steps still running (a test may want the real grace)
           "KRUNTIMES_POD_TERMINATION_GRACE_SECONDS": "6", **up_env}
    log = open(tmp_path / "up.log", "wb")  # noqa: SIM115
    up = subprocess.Popen([sys.executable, "manage.py", "up", "--port", str(port)], cwd=ROOT,
                          env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_until(lambda: _answers(session, base), timeout=60), "web never came up"
        yield session, base
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
        log.close()
        print((tmp_path / "up.log").read_text(errors="replace")[-6000:])


def _answers(session, base) -> bool:
    try:
        return session.get(f"{base}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False
