"""runtimed's side of the Runtime Server contract: execute one step through ``executor.v1.Runtime``
(and, for function mode, :class:`FunctionClient` for ``executor.v1.FunctionRuntime``)
on a pod-local address (``unix:/path`` or ``127.0.0.1:port``) and turn its end into a
:class:`runtimed.execute.Result`.

The client owns the step's lifetime: it cancels the execution when the Run is cancelled or the
pod stops (the server kills the process tree), reads the final status, and forgets the
execution so the server releases what it kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import grpc

from . import execute
from .protocol import Reason
from .runtime_server import runtime_pb2 as pb
from .runtime_server import runtime_pb2_grpc as pb_grpc
from .runtime_server.functions import DEFAULT_INVOKE_SECONDS, MAX_INVOKE_SECONDS, FunctionError

# Status is polled (the contract has no wait): first after a millisecond, then twice as long
# each time up to 50 ms, so a step of a few milliseconds is seen ended within about as long
# again, and a long one costs twenty polls a second at most
FIRST_POLL_SECONDS = 0.001
POLL_SECONDS = 0.05
FINAL = (pb.EXECUTION_STATE_SUCCEEDED, pb.EXECUTION_STATE_FAILED)


@dataclass(frozen=True)
class Ended:
    result: execute.Result
    output: str  # the server's bounded tail of the step's output


class RuntimeClient:
    def __init__(self, address: str, *, rpc_timeout: float = 10.0) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.RuntimeStub(self.channel)  # type: ignore[no-untyped-call]
        self.rpc_timeout = rpc_timeout

    def close(self) -> None:
        self.channel.close()

    def healthy(self, wait: float = 5.0) -> bool:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=wait)
            health: pb.HealthResponse = self.stub.Health(
                pb.HealthRequest(), timeout=self.rpc_timeout
            )
            return health.healthy
        except (grpc.RpcError, grpc.FutureTimeoutError):
            return False

    def run(
        self,
        request: pb.ExecuteRequest,
        control: execute.StepControl | None = None,
        wait: Callable[[str, float], object] = lambda _id, seconds: time.sleep(seconds),
    ) -> Ended:
        """Execute, poll to the end (cancelling on ``control``), read the status, forget.
        ``wait(id, seconds)`` passes the time between polls (a hosted server's returns as soon
        as the execution ends)."""
        start = datetime.now(UTC)
        control = control or execute.StepControl()
        try:
            self.stub.Execute(request, timeout=self.rpc_timeout)
        except grpc.RpcError as exc:
            message = f"the Runtime Server refused the step: {exc.details()}"
            failed = execute.Result(
                execute.FAILED, Reason.RUNTIME_ERROR, message, None, start, datetime.now(UTC)
            )
            return Ended(failed, "")
        cancel_sent = False
        delay = FIRST_POLL_SECONDS
        while True:
            status = self.stub.Status(pb.StatusRequest(id=request.id), timeout=self.rpc_timeout)
            if status.state in FINAL:
                break
            if control.cancelled and not cancel_sent:
                self.stub.Cancel(pb.CancelRequest(id=request.id), timeout=self.rpc_timeout)
                cancel_sent = True
            wait(request.id, delay)
            delay = min(delay * 2, POLL_SECONDS)
        self.stub.Forget(pb.ForgetRequest(id=request.id), timeout=self.rpc_timeout)
        end = datetime.now(UTC)
        if control.cancelled:
            return Ended(execute.stopped_result(control, start, end), status.stdout)
        if status.state == pb.EXECUTION_STATE_SUCCEEDED:
            return Ended(execute.Result(execute.SUCCEEDED, "", "", 0, start, end), status.stdout)
        message = status.error_message or f"the step exited with exit code {status.exit_code}"
        limit = request.timeout_seconds
        if limit > 0 and (end - start).total_seconds() >= limit:  # the server killed it
            timed_out = f"the step did not finish within {limit}s and was killed"
            result = execute.Result(execute.TIMEOUT, Reason.TIMEOUT, timed_out, None, start, end)
            return Ended(result, status.stdout)
        failed = execute.Result(
            execute.FAILED, Reason.RUNTIME_EXECUTE, message, status.exit_code, start, end
        )
        return Ended(failed, status.stdout)


class FunctionClient:
    """runtimed's side of function mode (``executor.v1.FunctionRuntime``) on a server's address:
    one method per RPC, each raising :class:`~runtimed.runtime_server.functions.FunctionError`
    with the call's gRPC status code when the server refuses or the call fails (UNIMPLEMENTED:
    the server has no function mode, a permanent configuration failure)."""

    def __init__(self, address: str, *, rpc_timeout: float = 30.0) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.FunctionRuntimeStub(self.channel)  # type: ignore[no-untyped-call]
        self.rpc_timeout = rpc_timeout

    def close(self) -> None:
        self.channel.close()

    def register(
        self,
        run_uid: str,
        attempt: int,
        working_dir: str,
        handler: str,
        digest: str,
        env: dict[str, str] | None = None,
        idle_timeout_seconds: int = 0,
    ) -> pb.RegisterFunctionResponse:
        request = pb.RegisterFunctionRequest(
            run_uid=run_uid,
            registration_attempt=attempt,
            working_dir=working_dir,
            handler=handler,
            env=env or {},
            idle_timeout_seconds=idle_timeout_seconds,
            registration_digest=digest,
        )
        response: pb.RegisterFunctionResponse = _call(
            self.stub.RegisterFunction, request, self.rpc_timeout
        )
        return response

    def status(self, registration: pb.FunctionRegistration) -> pb.FunctionStatusResponse:
        request = pb.FunctionStatusRequest(registration=registration)
        response: pb.FunctionStatusResponse = _call(
            self.stub.FunctionStatus, request, self.rpc_timeout
        )
        return response

    def invoke(
        self,
        registration: pb.FunctionRegistration,
        input: bytes,
        *,
        content_type: str = "application/json",
        invocation_id: str = "",
        timeout_millis: int = 0,
    ) -> pb.InvokeFunctionResponse:
        """One call; the RPC's own deadline leaves the server a second past ``timeout_millis``
        (0: the server's default, 60 s) to answer DEADLINE_EXCEEDED itself."""
        request = pb.InvokeFunctionRequest(
            registration=registration,
            invocation_id=invocation_id,
            input=input,
            content_type=content_type,
            timeout_millis=timeout_millis,
        )
        seconds = (timeout_millis / 1000 if timeout_millis > 0 else DEFAULT_INVOKE_SECONDS) + 1
        response: pb.InvokeFunctionResponse = _call(
            self.stub.InvokeFunction, request, min(seconds, MAX_INVOKE_SECONDS + 1)
        )
        return response

    def unregister(
        self,
        registration: pb.FunctionRegistration,
        *,
        cancel_in_flight: bool = False,
        drain_timeout_millis: int = 0,
    ) -> pb.UnregisterFunctionResponse:
        request = pb.UnregisterFunctionRequest(
            registration=registration,
            cancel_in_flight=cancel_in_flight,
            drain_timeout_millis=drain_timeout_millis,
        )
        seconds = self.rpc_timeout + drain_timeout_millis / 1000
        response: pb.UnregisterFunctionResponse = _call(
            self.stub.UnregisterFunction, request, seconds
        )
        return response


def _call(method: Callable[..., object], request: object, timeout: float) -> Any:
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as exc:
        raise FunctionError(exc.code(), exc.details() or "") from None
