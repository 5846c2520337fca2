"""``manage.py up``: web, the control worker, beat and (locally) the Runtime Pods, in the
foreground; Ctrl-C stops them all."""

from __future__ import annotations

import logging
import os
import shutil
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.processes import Child, Supervisor
from runtimed.protocol import CONTROL_QUEUE


def control_plane(port: int, bind: str) -> list[Child]:
    python = sys.executable
    web = [
        python,
        "-m",
        "gunicorn",
        "portal.wsgi:application",
        "--bind",
        f"{bind}:{port}",
        "--worker-class",
        "gthread",
        "--workers",
        "1",
        "--threads",
        "16",
        "--timeout",
        "120",
        "--access-logfile",
        "-",
    ]
    worker = [
        python,
        "-m",
        "celery",
        "-A",
        "portal",
        "worker",
        "-Q",
        CONTROL_QUEUE,
        "-n",
        "control@%h",
        "--concurrency",
        "2",
        "--loglevel",
        "INFO",
    ]
    beat = [
        python,
        "-m",
        "celery",
        "-A",
        "portal",
        "beat",
        "--loglevel",
        "INFO",
        "--scheduler",
        settings.CELERY_BEAT_SCHEDULER,
        "--pidfile",
        str(settings.DATA_DIR / "beat.pid"),
    ]
    return [Child("web", web), Child("control-worker", worker), Child("beat", beat)]


def metrics_dir() -> str:
    """prometheus-client multiprocess mode: web serves what the workers count."""
    path = settings.DATA_DIR / "metrics"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return str(path)


class Command(BaseCommand):
    help = "Start the web server, the control worker, beat and the local Runtime Pods."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--bind", default="127.0.0.1", help="address to listen on (0.0.0.0 for every interface)"
        )

    def handle(self, *args, port: int, bind: str, **options) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
        (settings.DATA_DIR / "beat.pid").unlink(missing_ok=True)
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir())
        supervisor = Supervisor(
            control_plane(port, bind), stop_timeout=settings.KRUNTIMES_POD_TERMINATION_GRACE_SECONDS
        )
        tick = None
        if settings.KRUNTIMES_CLUSTER == "local":
            from scheduling.providers.local import LocalProvider

            provider = LocalProvider(supervisor)
            provider.cleanup_orphans()
            tick = provider.sync
        self.stdout.write(
            f"kruntimes portal: admin http://{bind}:{port}/admin/ , "
            f"API http://{bind}:{port}/apis , Ctrl-C stops everything"
        )
        supervisor.run(tick=tick, poll=0.5)
