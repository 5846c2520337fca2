"""Real Celery worker and beat processes against the test database and a real broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection

from tests.helpers.services import require_redis
from tests.helpers.waiting import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]


def redis_url() -> str:
    url = os.environ.get("CELERY_BROKER_URL", "")
    return url if url.startswith("redis://") else "redis://127.0.0.1:6379/15"


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
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", *argv],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.running.append(process)
        return process

    def output(self) -> str:
        """Every process's log, for a failing test's report."""
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.logs.glob("*.log"))
        )

    def worker(self) -> subprocess.Popen:
        return self.start(
            "worker",
            "-Q",
            "control",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "-n",
            f"test-{os.getpid()}-{len(self.running)}@%h",
        )

    def beat(self, schedule_dir: Path) -> subprocess.Popen:
        return self.start(
            "beat",
            "--loglevel",
            "INFO",
            "--scheduler",
            "django_celery_beat.schedulers:DatabaseScheduler",
            "--pidfile",
            str(schedule_dir / "beat.pid"),
        )

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
    env = {
        **os.environ,
        **broker,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_EAGER": "0",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KRUNTIMES_RECONCILE_INTERVAL_SECONDS": "1",
        "PYTHONPATH": str(ROOT),
    }
    if "KRUNTIMES_DATA_DIR" not in broker:
        env["KRUNTIMES_DATA_DIR"] = str(settings.DATA_DIR)
    from portal.models import Namespace

    # transactional tests flush tables, the migration's "default" namespace included
    Namespace.objects.get_or_create(
        name="default", defaults={"spec": {"finalizers": ["kubernetes"]}}
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = Processes(env, logs)
    yield procs
    procs.stop()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print(procs.output())


@pytest.fixture
def up_env() -> dict[str, str]:
    """Extra environment for ``manage.py up`` (a test module may override this fixture)."""
    return {}


class PortalUp:
    """``manage.py up`` as a process that a test may stop (SIGTERM) and start again."""

    def __init__(
        self, env: dict[str, str], port: int, log_path: Path, *, tls: bool = False
    ) -> None:
        self.env, self.port, self.log_path, self.tls = env, port, log_path, tls
        self.process: subprocess.Popen | None = None
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        self.data_dir = Path(env["KRUNTIMES_DATA_DIR"])

    def start(self, session: requests.Session) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "up",
                "--port",
                str(self.port),
                *(["--tls"] if self.tls else []),
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        assert wait_until(lambda: _answers(session, self.base), timeout=60), "web never came up"

    def stop(self, timeout: float = 30.0) -> float:
        """SIGTERM and wait; returns how long the stop took."""
        started = time.monotonic()
        if self.process is None:
            return 0.0
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None
        return time.monotonic() - started


def up_process(broker, tmp_path, up_env, *, tls: bool = False) -> PortalUp:
    env = {
        **os.environ,
        **broker,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_EAGER": "0",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "PYTHONPATH": str(ROOT),
        "KRUNTIMES_DATA_DIR": broker.get("KRUNTIMES_DATA_DIR", str(tmp_path / "data")),
        # a short stop: tests end with steps still running (a test may want the real grace)
        "KRUNTIMES_POD_TERMINATION_GRACE_SECONDS": "6",
        **up_env,
    }
    return PortalUp(env, free_port(), tmp_path / "up.log", tls=tls)


def api_session(admin_user) -> requests.Session:
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=admin_user)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token.key}"
    return session


@pytest.fixture
def portal_up(broker, tmp_path, admin_user, up_env):
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})
    session = api_session(admin_user)
    up = up_process(broker, tmp_path, up_env)
    try:
        up.start(session)
        yield session, up.base
    finally:
        up.stop()
        print(up.log_path.read_text(errors="replace")[-6000:])


@contextmanager
def running_up_tls(tmp_path: Path, admin_user, up_env: dict[str, str]) -> Iterator[tuple]:
    """``manage.py up --tls`` on the filesystem broker while the block runs: (session
    verifying the data dir's CA with the admin's token, base URL, the PortalUp). The CA is
    made first, as ``up`` would. Needs database access (the admin's token, ``default``)."""
    from portal import tls
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})
    data = tmp_path / "data"
    data.mkdir()
    broker = {"CELERY_BROKER_URL": "filesystem://localhost/", "KRUNTIMES_DATA_DIR": str(data)}
    up = up_process(broker, tmp_path, up_env, tls=True)
    paths = tls.Paths(up.data_dir / "tls")
    tls.ensure_server_cert(paths, tls.server_hosts("127.0.0.1"))
    session = api_session(admin_user)
    session.verify = str(paths.ca_cert)
    session.trust_env = False  # else REQUESTS_CA_BUNDLE would stand in for the data dir's CA
    try:
        up.start(session)
        yield session, up.base, up
    finally:
        up.stop()
        print(up.log_path.read_text(errors="replace")[-6000:])


@pytest.fixture
def portal_up_tls(tmp_path, admin_user, up_env):
    """``running_up_tls`` for one test."""
    with running_up_tls(tmp_path, admin_user, up_env) as running:
        yield running


def _answers(session, base) -> bool:
    try:
        return session.get(f"{base}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture
def admin_kubeconfig(portal_up_tls, admin_user, tmp_path) -> Path:
    """The admin's kubeconfig for ``manage.py up --tls`` (``portal_up_tls``)."""
    from tests.helpers.kubectl import up_kubeconfig

    return up_kubeconfig(tmp_path / "kubeconfig", portal_up_tls, admin_user)
