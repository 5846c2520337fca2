"""``manage.py demo``: ``manage.py up`` in the background, then the seed's Workflow run to its
end with its job/step table, then the console keeps serving (``DEMO_EXIT=1``: stop there).

The processes' own logs go to ``<KRUNTIMES_DATA_DIR>/demo-up.log``, so the table stays
readable. The exit code is ``run-workflow``'s: 0 only when the WorkflowRun Succeeded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

WORKFLOW = "ci-data-sharing-demo"


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Start the portal, run the demo Workflow to its end, keep serving (DEMO_EXIT=1: exit)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--bind", default="127.0.0.1")
        parser.add_argument("--workflow", default=WORKFLOW)
        parser.add_argument("-n", "--namespace", default="ci")
        parser.add_argument("--timeout", type=float, default=300.0)

    def handle(self, *args, port, bind, workflow, namespace, timeout, **options) -> None:
        # Ctrl-C and SIGTERM both stop the portal it started (up runs in its own session)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        log_path = settings.DATA_DIR / "demo-up.log"
        with open(log_path, "ab") as log:
            up = subprocess.Popen(
                [sys.executable, "manage.py", "up", "--port", str(port), "--bind", bind],
                cwd=settings.BASE_DIR,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_for_web(up, bind, port)
            self.stdout.write(f"portal up at http://{bind}:{port}/admin/ (logs: {log_path})")
            code = self._run(workflow, namespace, timeout)
            if os.environ.get("DEMO_EXIT") == "1":
                sys.exit(code)
            self.stdout.write(f"serving the console at http://{bind}:{port}/admin/ ; Ctrl-C stops")
            up.wait()
        except KeyboardInterrupt:
            pass
        finally:
            self._stop(up)

    def _wait_for_web(self, up: subprocess.Popen, bind: str, port: int) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if up.poll() is not None:
                raise CommandError(f"manage.py up exited ({up.returncode}); see demo-up.log")
            try:
                with urllib.request.urlopen(f"http://{bind}:{port}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise CommandError("the portal did not answer within 120 s; see demo-up.log")

    def _run(self, workflow: str, namespace: str, timeout: float) -> int:
        try:
            call_command(
                "run-workflow",
                workflow,
                "-n",
                namespace,
                "--wait",
                "--timeout",
                str(timeout),
                stdout=self.stdout,
                stderr=self.stderr,
            )
        except CommandError as exc:  # the run did not succeed (or timed out): say so, keep serving
            self.stderr.write(f"error: {exc}")
            return exc.returncode
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    @staticmethod
    def _stop(up: subprocess.Popen) -> None:
        if up.poll() is not None:
            return
        os.killpg(up.pid, signal.SIGTERM)
        try:
            up.wait(timeout=settings.KRUNTIMES_POD_TERMINATION_GRACE_SECONDS + 10)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
