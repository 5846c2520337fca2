"""``manage.py up``: web, the control worker and beat in the foreground; Ctrl-C stops all."""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.processes import Child, Supervisor


def control_plane(port: int, bind: str) -> list[Child]:
    python = sys.executable
    web = [python, "-m", "gunicorn", "portal.wsgi:application", "--bind", f"{bind}:{port}",
           "--worker-class", "gthread", "--workers", "1", "--threads", "8",
           "--timeout", "120", "--access-logfile", "-"]
    worker = [python, "-m", "celery", "-A", "portal", "worker", "-Q", "control",
              "-n", "control@%h", "--concurrency", "2", "--loglevel", "INFO"]
    beat = [python, "-m", "celery", "-A", "portal", "beat", "--loglevel", "INFO",
            "--scheduler", settings.CELERY_BEAT_SCHEDULER,
            "--pidfile", str(settings.DATA_DIR / "beat.pid")]
    return [Child("web", web), Child("control-worker", worker), Child("beat", beat)]


class Command(BaseCommand):
    help = "Start the web server, the control worker and beat in the foreground."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--bind", default="127.0.0.1",
                            help="address to listen on (0.0.0.0 for every interface)")

    def handle(self, *args, port: int, bind: str, **options) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
        (settings.DATA_DIR / "beat.pid").unlink(missing_ok=True)
        children = control_plane(port, bind)
        self.stdout.write(f"kruntimes portal: admin http://{bind}:{port}/admin/ , "
                          f"API http://{bind}:{port}/apis , Ctrl-C stops everything")
        Supervisor(children).run()
