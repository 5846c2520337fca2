"""Calling a function Run: ``POST status.endpoint.url`` with the kubeconfig's bearer token,
trusting the endpoint's ``caBundle`` plus the kubeconfig's CA, over one keep-alive
connection pool (urllib3). Errors are the gateway's Kubernetes Status (400, 403, 404, 409,
413, 429, 503, 504) as a typed ``InvokeError``; nothing is retried here: an invocation may
not be idempotent, so a retry is the caller's call."""

from __future__ import annotations

import ssl
from typing import Any

from .connection import Connection, decode_ca_bundle
from .errors import InvokeError, KrtError, invoke_error

INVOCATION_HEADER = "X-Kruntime-Invocation-ID"
TIMEOUT_HEADER = "X-Kruntime-Timeout"
TIMEOUT_MARGIN = 5.0  # seconds: the gateway answers 504 itself before we give up


def endpoint_of(run: dict[str, Any]) -> tuple[str, str]:
    """(url, CA PEM) of a Ready function Run's endpoint."""
    endpoint = (run.get("status") or {}).get("endpoint") or {}
    url = endpoint.get("url")
    if not url:
        name = (run.get("metadata") or {}).get("name")
        phase = (run.get("status") or {}).get("phase") or "Pending"
        raise KrtError(
            f'Run "{name}" has no endpoint (phase {phase}; a function Run serves once Ready)'
        )
    return str(url), decode_ca_bundle(endpoint.get("caBundle"))


class Invoker:
    """One pool of HTTPS connections to a function endpoint, reused across invocations."""

    def __init__(self, conn: Connection, url: str, ca_bundle: str = "") -> None:
        import urllib3

        self.url = url
        self.token = conn.bearer_token()
        context = ssl.create_default_context()
        cas = "\n".join(p for p in (ca_bundle, conn.ca_pem()) if p.strip())
        if cas:
            context.load_verify_locations(cadata=cas)
        cert, key = conn.client_cert()
        if cert:
            context.load_cert_chain(cert, key)
        self.pool = urllib3.PoolManager(num_pools=1, maxsize=1, ssl_context=context, retries=False)

    def invoke(
        self, body: bytes, *, invocation_id: str | None = None, timeout: float | None = None
    ) -> bytes:
        import urllib3

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if invocation_id:
            headers[INVOCATION_HEADER] = invocation_id
        read = None
        if timeout is not None:  # the gateway's own limit, and ours a little after it
            headers[TIMEOUT_HEADER] = f"{timeout:g}s"
            read = timeout + TIMEOUT_MARGIN
        try:
            response = self.pool.request(
                "POST",
                self.url,
                body=body,
                headers=headers,
                timeout=urllib3.Timeout(connect=30.0, read=read),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise InvokeError(
                0, "Unreachable", f"cannot reach {self.url}: {getattr(exc, 'reason', exc)}"
            ) from None
        if not 200 <= response.status < 300:
            raise invoke_error(response.status, response.data, response.reason or "")
        return bytes(response.data)

    def close(self) -> None:
        self.pool.clear()
