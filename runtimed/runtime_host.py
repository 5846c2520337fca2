"""Where runtimed's steps execute: the pod's Runtime Server, over ``executor.v1.Runtime``.

A pod runs one server for its life (docs/runtime-server.md):

- a **built-in** one (``bash``, the default, or ``python``), hosted by runtimed itself on a
  pod-local unix socket; runtimed hands it, beside each wire request, the attempt's log file,
  the log shipper, the secrets to mask and the Run's StepControl, so every guarantee of
  :mod:`runtimed.execute` holds unchanged (the step runs through ``run_step``);
- a **command** (``KRUNTIME_RUNTIME_SERVER_COMMAND``): a third-party server runtimed starts
  beside it with ``KRUNTIME_RUNTIME_ADDRESS`` (also substituted for ``$(KRUNTIME_RUNTIME_ADDRESS)``
  in its argv, as Kubernetes expands a container's args) and stops when it stops. Its bounded
  output tail becomes the attempt's log (masked) at the step's end;
- an **address** (``KRUNTIME_RUNTIME_SERVER_ADDRESS``): a server already listening in the pod
  (the runtime container, in Kubernetes); runtimed only connects, its output as a command's.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import grpc

from . import masking
from .config import PodConfig
from .execute import FAILED, Clock, Result, Step, StepControl
from .protocol import Reason
from .runtime_client import RuntimeClient
from .runtime_server import runtime_pb2 as pb
from .runtime_server import runtime_pb2_grpc as pb_grpc
from .runtime_server.functions import FunctionError, FunctionRuntimeServicer
from .runtime_server.programs import BUILT_IN
from .runtime_server.server import InProcess, RuntimeServicer, serve
from .staging import PrepareError

log = logging.getLogger("runtimed.runtime_host")

ADDRESS_VARIABLE = "KRUNTIME_RUNTIME_ADDRESS"
START_SECONDS = 30.0


class FunctionCalls(Protocol):
    """What runtimed calls on the pod's FunctionRuntime: a gRPC stub's shape (errors are
    ``grpc.RpcError`` with ``code()`` and ``details()``)."""

    def RegisterFunction(self, request: Any, timeout: float | None = None) -> Any: ...  # noqa: N802
    def FunctionStatus(self, request: Any, timeout: float | None = None) -> Any: ...  # noqa: N802
    def InvokeFunction(self, request: Any, timeout: float | None = None) -> Any: ...  # noqa: N802
    def UnregisterFunction(self, request: Any, timeout: float | None = None) -> Any: ...  # noqa: N802


class LocalRpcError(grpc.RpcError):
    """A hosted servicer's refusal, as a stub would raise it."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class InProcessFunctions:
    """The hosted built-in ``FunctionRuntime`` servicer with a stub's call shape (the
    servicer bounds its own invocations by ``timeout_millis``)."""

    def __init__(self, servicer: FunctionRuntimeServicer) -> None:
        self.servicer = servicer

    @staticmethod
    def _call(method: Callable[[Any], Any], request: Any) -> Any:
        try:
            return method(request)
        except FunctionError as exc:
            raise LocalRpcError(exc.code, exc.message) from None

    def RegisterFunction(self, request: Any, timeout: float | None = None) -> Any:  # noqa: N802
        return self._call(self.servicer.register, request)

    def FunctionStatus(self, request: Any, timeout: float | None = None) -> Any:  # noqa: N802
        return self._call(self.servicer.status, request)

    def InvokeFunction(self, request: Any, timeout: float | None = None) -> Any:  # noqa: N802
        return self._call(self.servicer.invoke, request)

    def UnregisterFunction(self, request: Any, timeout: float | None = None) -> Any:  # noqa: N802
        return self._call(self.servicer.unregister, request)


class RuntimeHost:
    def __init__(
        self, builtin: str = "bash", command: tuple[str, ...] = (), address: str = ""
    ) -> None:
        if not command and not address and builtin not in BUILT_IN:
            raise ValueError(f"no built-in Runtime Server {builtin!r}")
        self.builtin, self.command, self.external = builtin, command, address
        self.socket_dir = Path(tempfile.mkdtemp(prefix="krt-"))  # short: sun_path is 108 bytes
        self.address = address or f"unix:{self.socket_dir}/runtime.sock"
        self._servicer: RuntimeServicer | None = None
        self._server: object | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._client: RuntimeClient | None = None
        self._lock = threading.Lock()

    def validate(self, cwd: Path, entrypoint: str, args: tuple[str, ...]) -> None:
        """Raise PrepareError when a built-in server would refuse the step (PrepareSource)."""
        if not self.command and not self.external:
            BUILT_IN[self.builtin](cwd, entrypoint, args)

    def start(self) -> None:
        """Start the server now (it is started on first use otherwise); OSError if it does
        not come up."""
        self._start()

    def _start(self) -> RuntimeClient:
        with self._lock:
            if self._client is not None:
                return self._client
            if self.external:
                pass  # listening already
            elif self.command:
                argv = [arg.replace(f"$({ADDRESS_VARIABLE})", self.address) for arg in self.command]
                env = {**os.environ, ADDRESS_VARIABLE: self.address}
                self._child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
            else:
                self._server, self._servicer = serve(
                    self.builtin, self.address, self.socket_dir / "state"
                )
            client = RuntimeClient(self.address)
            if not client.healthy(START_SECONDS):
                client.close()
                self._stop_child()  # a command that did not come up; the next step retries
                raise OSError(f"the Runtime Server at {self.address} is not healthy")
            self._client = client
            return client

    def function_stub(self) -> FunctionCalls:
        """The pod's Runtime Server as a function server (started on first use): the hosted
        built-in servicer called in process (no gRPC hop on the invocation path), else a stub
        on the server's address; a server without ``FunctionRuntime`` answers UNIMPLEMENTED."""
        client = self._start()
        hosted = self.functions()
        if hosted is not None:
            return InProcessFunctions(hosted)
        return pb_grpc.FunctionRuntimeStub(client.channel)  # type: ignore[no-untyped-call]

    def functions(self) -> FunctionRuntimeServicer | None:
        """The hosted built-in server's ``FunctionRuntime`` servicer, to call in process
        (started on first use); None when the server is a command or an address (use
        :class:`~runtimed.runtime_client.FunctionClient` on :attr:`address` then)."""
        self._start()
        return self._servicer.functions if self._servicer is not None else None

    def run(
        self, step: Step, entrypoint: str, args: tuple[str, ...], *, clock: Clock, grace: float
    ) -> Result:  # noqa: E501
        client = self._start()
        id = uuid.uuid4().hex
        timeout = int(step.timeout) if step.timeout else 0
        if step.timeout and timeout < step.timeout:
            timeout += 1  # the wire counts whole seconds; a hosted server gets the exact one
        request = pb.ExecuteRequest(
            id=id,
            args=list(args),
            env=dict(step.env),
            timeout_seconds=timeout,
            working_dir=str(step.cwd),
            entrypoint=entrypoint,
        )
        control = step.control or StepControl()
        if self._servicer is not None:
            hosted = InProcess(
                step.log_path, step.on_output, control, step.masked, clock, grace, step.timeout
            )
            self._servicer.attach(id, hosted)
            ended = client.run(request, control, wait=self._servicer.wait)
            if hosted.error is not None:
                raise hosted.error
            if hosted.result is not None:
                return hosted.result
            lost = ended.result  # refused by the server: runtimed's failure, not the Run's
            return Result(FAILED, Reason.RUNTIME_ERROR, lost.message, None, lost.start, lost.end)
        ended = client.run(request, control)
        self._keep_output(step, ended.output)
        return ended.result

    @staticmethod
    def _keep_output(step: Step, output: str) -> None:
        data = masking.mask_text(output, step.masked).encode()
        step.log_path.write_bytes(data)
        if step.on_output is not None and data:
            step.on_output(data)

    def _stop_child(self) -> None:
        child, self._child = self._child, None
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def close(self) -> None:
        if self._servicer is not None:
            self._servicer.cancel_all()
        self._stop_child()
        if self._client is not None:
            self._client.close()
        shutil.rmtree(self.socket_dir, ignore_errors=True)


_hosts: dict[tuple[str, tuple[str, ...], str], RuntimeHost] = {}
_hosts_lock = threading.Lock()


def for_pod(builtin: str, command: tuple[str, ...], address: str = "") -> RuntimeHost:
    """The pod's one Runtime Server host (started on first use, stopped at exit)."""
    key = (builtin, command, address)
    with _hosts_lock:
        host = _hosts.get(key)
        if host is None:
            host = _hosts[key] = RuntimeHost(builtin, command, address)
            atexit.register(host.close)
        return host


def for_config(config: PodConfig) -> RuntimeHost:
    """The pod's Runtime Server as its configuration names it."""
    return for_pod(
        config.runtime_server, config.runtime_server_command, config.runtime_server_address
    )


__all__ = ["PrepareError", "RuntimeHost", "for_config", "for_pod"]
