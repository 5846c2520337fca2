"""The Python SDK's client side of function-mode Runs.

    client = Client.from_kubeconfig()
    with client.function(runtime="python", source=SRC, handler="app.invoke") as fn:
        print(fn.invoke({"x": 1}))

``function`` creates a function Run (``spec.mode.function``, inline source), waits through
the watch API until it is ``Ready`` (a terminal phase first is ``FunctionFailed``, the time
running out ``NotReady``), invokes its HTTPS endpoint over one keep-alive connection, and
deletes the Run on exit. Invocations are never retried here: ``TooManyRequests`` (429) and
every other ``InvokeError`` go to the caller, who knows whether a call may repeat."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

from . import manifests
from .connection import Connection, Target
from .errors import ApiError, FunctionFailed, NotReady
from .invoking import Invoker, endpoint_of
from .resources import RUNS
from .watching import wait_for

ENDED = ("Succeeded", "Failed", "Timeout", "Cancelled")
DEFAULT_READY_TIMEOUT = 120.0


class Client:
    """A kubeconfig context and a namespace to create function Runs in."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    @classmethod
    def from_kubeconfig(
        cls,
        context: str | None = None,
        namespace: str | None = None,
        *,
        kubeconfig: str | None = None,
        as_user: str | None = None,
    ) -> Client:
        return cls(Connection.open(Target(kubeconfig, context, namespace, as_user)))

    @property
    def namespace(self) -> str:
        return self.connection.namespace

    def function(
        self,
        *,
        runtime: str = "python",
        source: str,
        handler: str = "app.invoke",
        inline_path: str = "app.py",
        idle_timeout_seconds: int | None = None,
        name: str | None = None,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
    ) -> Function:
        """A function Run, created when the ``with`` block is entered (or by ``start``)."""
        body = manifests.function_run(
            namespace=self.namespace,
            runtime=runtime,
            source=source,
            handler=handler,
            inline_path=inline_path,
            idle_timeout_seconds=idle_timeout_seconds,
            name=name,
        )
        return Function(self.connection, body, ready_timeout=ready_timeout)


class Function:
    """One function Run: ``start`` (create + wait Ready), ``invoke``, ``close`` (delete)."""

    def __init__(
        self, connection: Connection, body: dict[str, Any], *, ready_timeout: float
    ) -> None:
        self.connection = connection
        self.body = body
        self.ready_timeout = ready_timeout
        self.run: dict[str, Any] | None = None
        self._invoker: Invoker | None = None

    @property
    def name(self) -> str:
        if self.run is None:
            raise NotReady("the function Run was not created yet (use it in a with block)")
        return str(self.run["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"]["namespace"])

    def start(self) -> Function:
        conn = self.connection
        self.run = conn.json("POST", RUNS.path(self.namespace), body=self.body)
        try:
            self.run = self._wait_ready()
            url, ca = endpoint_of(self.run)
            self._invoker = Invoker(conn, url, ca)
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self) -> dict[str, Any]:
        def settled(run: dict[str, Any]) -> bool:
            status = run.get("status") or {}
            return status.get("phase") in (*ENDED, "Ready")

        run, done = wait_for(
            self.connection, RUNS, self.namespace, self.name, settled, timeout=self.ready_timeout
        )
        status = run.get("status") or {}
        phase = str(status.get("phase") or "Pending")
        if not done:
            message = status.get("message") or ""
            raise NotReady(
                f'Run "{self.name}" is not Ready after {self.ready_timeout:g}s (phase {phase}'
                + (f": {message})" if message else ")")
            )
        if phase != "Ready":
            raise FunctionFailed(self.name, phase, str(status.get("message") or ""))
        if not (status.get("endpoint") or {}).get("url"):  # e.g. a portal without HTTPS
            ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
            why = (ready[0].get("message") if ready else "") or status.get("message") or ""
            raise NotReady(
                f'Run "{self.name}" is Ready but publishes no endpoint: {why}'.rstrip(": ")
            )
        return run

    def invoke(
        self, payload: Any = None, *, invocation_id: str | None = None, timeout: float | None = None
    ) -> Any:
        """POST ``payload`` as JSON; the response body parsed as JSON (text if it is not)."""
        if self._invoker is None:
            raise NotReady("the function is not started (use it in a with block)")
        raw = self._invoker.invoke(
            json.dumps(payload).encode(), invocation_id=invocation_id, timeout=timeout
        )
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def close(self) -> None:
        """Delete the Run (its endpoint stops serving); a Run already gone is fine."""
        if self._invoker is not None:
            self._invoker.close()
            self._invoker = None
        if self.run is None:
            return
        try:
            self.connection.json("DELETE", RUNS.path(self.namespace, self.name))
        except ApiError as exc:
            if exc.status != 404:
                raise
        self.run = None

    def __enter__(self) -> Function:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
