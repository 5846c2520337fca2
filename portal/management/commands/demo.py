"""``manage.py demo``: ``manage.py up --tls`` in the background, then the seed's Workflow run
to its end with its job/step table, then the console keeps serving (``DEMO_EXIT=1``: stop there).

It writes ``<KRUNTIMES_DATA_DIR>/kubeconfig`` for the admin (the data dir's CA, the admin's
token) and prints the two lines that point kubectl at the portal.

The processes' own logs go to ``<KRUNTIMES_DATA_DIR>/demo-up.log``, so the table stays
readable. The exit code is ``run-workflow``'s: 0 only when the WorkflowRun Succeeded.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from portal import tls
from portal.kubeconfig import for_user, write_private

WORKFLOW = "ci-data-sharing-demo"


def server_url(bind: str, port: int) -> str:
    """The URL a client on this machine uses (a wildcard bind answers on loopback too)."""
    host = bind.strip("[]")
    if host in tls.WILDCARD_BINDS:
        host = "127.0.0.1"
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


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
        parser.add_argument("--user", default="admin", help="whose kubeconfig to write")

    def handle(self, *args, port, bind, workflow, namespace, timeout, user, **options) -> None:
        # Ctrl-C and SIGTERM both stop the portal it started (up runs in its own session)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        log_path = settings.DATA_DIR / "demo-up.log"
        paths = tls.data_dir_paths()
        tls.ensure_server_cert(paths, tls.server_hosts(bind))  # up --tls reuses it
        server = server_url(bind, port)
        with open(log_path, "ab") as log:
            up = subprocess.Popen(
                [sys.executable, "manage.py", "up", "--port", str(port), "--bind", bind, "--tls"],
                cwd=settings.BASE_DIR,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_for_web(up, server, paths.ca_cert)
            self.stdout.write(f"portal up at {server}/admin/ (logs: {log_path})")
            code = self._run(workflow, namespace, timeout)
            self._kubectl_lines(user, server, namespace)
            if os.environ.get("DEMO_EXIT") == "1":
                sys.exit(code)
            self.stdout.write(f"serving the console at {server}/admin/ ; Ctrl-C stops")
            up.wait()
        except KeyboardInterrupt:
            pass
        finally:
            self._stop(up)

    def _kubectl_lines(self, username: str, server: str, namespace: str) -> None:
        """Write the user's kubeconfig into the data dir and print how kubectl uses it."""
        from django.contrib.auth import get_user_model

        found = get_user_model().objects.filter(username=username).first()
        if found is None:
            self.stderr.write(f'no user "{username}": no kubeconfig written')
            return
        path = settings.DATA_DIR / "kubeconfig"
        write_private(path, for_user(found, server=server, namespace=namespace))
        self.stdout.write(f"export KUBECONFIG={path}")
        self.stdout.write(f"kubectl get runs -n {namespace}")

    def _wait_for_web(self, up: subprocess.Popen, server: str, ca_file) -> None:
        context = ssl.create_default_context(cafile=str(ca_file))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if up.poll() is not None:
                raise CommandError(f"manage.py up exited ({up.returncode}); see demo-up.log")
            try:
                with urllib.request.urlopen(
                    f"{server}/healthz", timeout=2, context=context
                ) as answer:
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
