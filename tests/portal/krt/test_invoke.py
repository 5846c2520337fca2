"""Invoking a function endpoint over HTTPS, against a stand-in for the gateway (which this
repository does not have yet) that speaks its contract: bearer token, JSON body, the
invocation ID header, Kubernetes Status errors. The TLS is real: the endpoint's own CA
(``caBundle``) is trusted beside the kubeconfig's, and one connection serves every call."""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from portal import tls
from portal.krt.connection import Connection, Target
from portal.krt.errors import InvokeError, KrtError, TooManyRequests
from portal.krt.invoking import INVOCATION_HEADER, Invoker, endpoint_of
from portal.kubeconfig import as_yaml, kubeconfig, write_private

TOKEN = "t0ken"


class Gateway(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    seen: list[dict] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"] or 0))
        self.seen.append({"path": self.path, "peer": self.client_address, "body": body,
                          "headers": dict(self.headers)})  # fmt: skip
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.answer(403, status(403, "Forbidden", 'User "x" cannot invoke runs'))
        if self.path.endswith("/busy"):
            return self.answer(
                429, status(429, "TooManyRequests", "the function is at its concurrency limit")
            )
        if self.path.endswith("/gone"):
            return self.answer(503, b"<html>not a Status</html>")
        return self.answer(200, json.dumps({"echo": json.loads(body)}).encode())

    def answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def status(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "code": code, "reason": reason, "message": message}).encode()  # fmt: skip


@pytest.fixture
def gateway(tmp_path) -> Iterator[tuple[str, str]]:
    """(base URL, the endpoint CA's PEM) of an HTTPS stand-in on a free port."""
    paths = tls.Paths(tmp_path / "gateway-tls")
    files = tls.ensure_server_cert(paths, ["127.0.0.1", "localhost"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files.cert, files.key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    Gateway.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", paths.ca_cert.read_text()
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def connection(tmp_path) -> Connection:
    """A kubeconfig whose cluster CA is another CA (the API server's, not the gateway's)."""
    api_ca = tls.ensure_ca(tls.Paths(tmp_path / "api-tls"))
    path = tmp_path / "kubeconfig"
    config = kubeconfig(server="https://127.0.0.1:1", ca_pem=tls.pem(api_ca), username="dev",
                        token=TOKEN, namespace="team")  # fmt: skip
    write_private(path, as_yaml(config))
    return Connection.open(Target(kubeconfig=str(path)))


def run_with(url: str, ca: str | None, *, encode: bool = False) -> dict:
    endpoint = {"protocol": "HTTPS", "url": url}
    if ca is not None:  # PEM as the portal publishes it, or base64 as Kubernetes' caBundles
        endpoint["caBundle"] = base64.b64encode(ca.encode()).decode() if encode else ca
    return {"metadata": {"name": "fn"}, "status": {"phase": "Ready", "endpoint": endpoint}}


def test_invocations_carry_the_token_and_id_and_share_one_connection(gateway, connection):
    base, ca = gateway
    assert connection.namespace == "team"
    url, bundle = endpoint_of(run_with(f"{base}/invoke", ca))
    invoker = Invoker(connection, url, bundle)
    assert json.loads(invoker.invoke(b'{"n": 1}', invocation_id="abc", timeout=2.5)) == {
        "echo": {"n": 1}
    }
    assert json.loads(invoker.invoke(b'{"n": 2}')) == {"echo": {"n": 2}}
    assert endpoint_of(run_with(url, ca, encode=True))[1] == bundle == ca
    first, second = Gateway.seen
    assert (
        first["headers"][INVOCATION_HEADER] == "abc" and INVOCATION_HEADER not in second["headers"]
    )
    assert first["headers"]["Content-Type"] == "application/json"
    assert (
        first["headers"]["X-Kruntime-Timeout"] == "2.5s"
        and "X-Kruntime-Timeout" not in second["headers"]
    )
    assert first["peer"] == second["peer"]  # the same client socket: keep-alive
    invoker.close()


@pytest.mark.parametrize(
    ("path", "kind", "code", "reason", "message"),
    [
        ("/busy", TooManyRequests, 429, "TooManyRequests", "the function is at its concurrency limit"),
        ("/gone", InvokeError, 503, "Service Unavailable", "the server answered 503 Service Unavailable: <html>not a Status</html>"),
    ],
)  # fmt: skip
def test_errors_are_the_status_message_typed_by_code(
    gateway, connection, path, kind, code, reason, message
):
    base, ca = gateway
    invoker = Invoker(connection, *endpoint_of(run_with(base + path, ca)))
    with pytest.raises(kind) as failed:
        invoker.invoke(b"{}")
    assert type(failed.value) is kind
    assert (failed.value.code, failed.value.reason, failed.value.message) == (code, reason, message)
    assert len(Gateway.seen) == 1  # never retried


def test_the_endpoint_ca_is_needed_and_a_wrong_token_is_forbidden(gateway, connection, tmp_path):
    base, ca = gateway
    untrusted = Invoker(connection, *endpoint_of(run_with(f"{base}/invoke", None)))
    with pytest.raises(InvokeError) as failed:
        untrusted.invoke(b"{}")
    assert failed.value.code == 0 and "CERTIFICATE_VERIFY_FAILED" in failed.value.message
    connection.api.configuration.api_key["authorization"] = "Bearer wrong"
    forbidden = Invoker(connection, *endpoint_of(run_with(f"{base}/invoke", ca)))
    with pytest.raises(InvokeError, match="cannot invoke runs") as denied:
        forbidden.invoke(b"{}")
    assert denied.value.code == 403


def test_a_run_without_an_endpoint_says_so():
    with pytest.raises(KrtError, match=r'Run "fn" has no endpoint \(phase Pending'):
        endpoint_of({"metadata": {"name": "fn"}, "status": {}})
    with pytest.raises(KrtError, match="caBundle is neither PEM nor base64"):
        endpoint_of(
            run_with("https://x", None)
            | {"status": {"endpoint": {"url": "https://x", "caBundle": "%%"}}}
        )


def test_missing_kubeconfigs_and_contexts_are_one_line_errors(tmp_path):
    with pytest.raises(KrtError, match=r"kubeconfig .*/none: "):
        Connection.open(Target(kubeconfig=str(tmp_path / "none")))
    path = tmp_path / "kubeconfig"
    write_private(
        path, as_yaml(kubeconfig(server="https://h:1", ca_pem=b"", username="u", token="t"))
    )
    assert Connection.open(Target(kubeconfig=str(path))).namespace == "default"
    with pytest.raises(KrtError, match='context "other"'):
        Connection.open(Target(kubeconfig=str(path), context="other"))
    assert Path(path).exists()
