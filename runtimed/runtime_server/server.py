"""A Runtime Server for built-in programs: ``executor.v1.Runtime`` over gRPC.

Each execution runs through :func:`runtimed.execute.run_step`, so a server keeps the guarantees
runtimed's own steps have: its own process group and session, the whole process tree killed at
the end, on Cancel and at the timeout (SIGTERM, SIGKILL after a grace). Its merged output goes
to a file in the server's state directory; Status returns a bounded tail of it (``stdout``),
and Forget deletes it. The table of executions is bounded too (RESOURCE_EXHAUSTED beyond).
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from .. import execute
from ..staging import PrepareError
from . import runtime_pb2 as pb
from . import runtime_pb2_grpc as pb_grpc
from .functions import FunctionRuntimeServicer
from .programs import BUILT_IN, Program

log = logging.getLogger("runtimed.runtime_server")

OUTPUT_TAIL_BYTES = 64 * 1024
MAX_EXECUTIONS = 256
MAX_ID_LENGTH = 253


@dataclass
class InProcess:
    """What runtimed hands the built-in server it hosts for one execution id, beside the wire
    request: the attempt's log file, the log shipper, the secrets to mask, the Run's own
    StepControl (so runtimed's cancel and drain signal the step with runtimed's grace), and
    where the exact :class:`~runtimed.execute.Result` is left for it."""

    log_path: Path
    on_output: Callable[[bytes], object] | None
    control: execute.StepControl
    masked: tuple[bytes, ...]
    clock: execute.Clock
    grace: float
    timeout: float | None  # exact (the wire's timeout_seconds is whole seconds)
    result: execute.Result | None = None
    error: Exception | None = None  # raised again in runtimed, as if it ran the step itself


@dataclass
class Execution:
    id: str
    log_path: Path
    control: execute.StepControl = field(default_factory=execute.StepControl)
    ended: threading.Event = field(default_factory=threading.Event)
    state: pb.ExecutionState = pb.EXECUTION_STATE_PENDING
    exit_code: int = 0
    error_message: str = ""
    thread: threading.Thread | None = None

    def tail(self) -> str:
        try:
            with open(self.log_path, "rb") as stream:
                size = stream.seek(0, 2)
                stream.seek(max(0, size - OUTPUT_TAIL_BYTES))
                return stream.read().decode("utf-8", "replace")
        except OSError:
            return ""


class RuntimeServicer(pb_grpc.RuntimeServicer):
    """The executions of one server, by the caller's id."""

    def __init__(self, name: str, program: Program, state_dir: Path) -> None:
        self.name = name
        self.program = program
        self.state_dir = state_dir
        self._lock = threading.Lock()
        self._executions: dict[str, Execution] = {}
        self._in_process: dict[str, InProcess] = {}
        # function mode (``executor.v1.FunctionRuntime``), served beside it by :func:`serve`
        self.functions: FunctionRuntimeServicer | None = None

    def attach(self, id: str, options: InProcess) -> None:
        """The next Execute of ``id`` comes from the runtimed hosting this server."""
        with self._lock:
            self._in_process[id] = options

    def Execute(
        self, request: pb.ExecuteRequest, context: grpc.ServicerContext
    ) -> pb.ExecuteResponse:  # noqa: N802
        if not request.id or len(request.id) > MAX_ID_LENGTH or "/" in request.id:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "id: 1-253 characters, no '/'")
        cwd = Path(request.working_dir)
        if not cwd.is_absolute() or not cwd.is_dir():
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "working_dir: an existing absolute directory"
            )
        try:
            argv = self.program(cwd, request.entrypoint, tuple(request.args))
        except PrepareError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
        with self._lock:
            if request.id in self._executions:
                context.abort(grpc.StatusCode.ALREADY_EXISTS, f"execution {request.id} exists")
            if len(self._executions) >= MAX_EXECUTIONS:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "too many executions kept")
            hosted = self._in_process.pop(request.id, None)
            run = Execution(request.id, self.state_dir / f"{request.id}.log")
            if hosted is not None:
                run.log_path, run.control = hosted.log_path, hosted.control
            self._executions[request.id] = run
        step = execute.Step(
            argv,
            cwd,
            dict(request.env),
            run.log_path,
            hosted.timeout
            if hosted
            else (float(request.timeout_seconds) if request.timeout_seconds > 0 else None),
            on_output=hosted.on_output if hosted else None,
            control=run.control,
            masked=hosted.masked if hosted else (),
        )
        run.thread = threading.Thread(target=self._run, args=(run, step, hosted), daemon=True)
        run.thread.start()
        return pb.ExecuteResponse(id=request.id)

    def _run(self, run: Execution, step: execute.Step, hosted: InProcess | None) -> None:
        try:
            self._execute(run, step, hosted)
        finally:
            run.ended.set()

    def wait(self, id: str, seconds: float) -> None:
        """Return when execution ``id`` has ended, or after ``seconds``: the hosting runtimed
        waits on this between its Status polls, so it sees a step end at once instead of at
        the next poll (a remote server is polled only)."""
        with self._lock:
            run = self._executions.get(id)
        if run is not None:
            run.ended.wait(seconds)

    def _execute(self, run: Execution, step: execute.Step, hosted: InProcess | None) -> None:
        run.state = pb.EXECUTION_STATE_RUNNING
        try:
            if hosted is None:
                result = execute.run_step(step)
            else:
                result = execute.run_step(step, clock=hosted.clock, grace=hosted.grace)
                hosted.result = result
        except Exception as exc:  # noqa: BLE001 - the execution fails, the server stays up
            if hosted is not None:
                hosted.error = exc
            else:
                log.exception("execution %s", run.id)
            run.error_message, run.state = f"runtime error: {exc}", pb.EXECUTION_STATE_FAILED
            return
        run.exit_code = result.exit_code or 0
        run.error_message = result.message
        succeeded = result.phase == execute.SUCCEEDED
        run.state = pb.EXECUTION_STATE_SUCCEEDED if succeeded else pb.EXECUTION_STATE_FAILED

    def _find(self, id: str, context: grpc.ServicerContext) -> Execution:
        with self._lock:
            run = self._executions.get(id)
        if run is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"execution {id} not found")
        assert run is not None  # abort raises
        return run

    @staticmethod
    def _status(run: Execution) -> pb.StatusResponse:
        return pb.StatusResponse(
            id=run.id,
            state=run.state,
            exit_code=run.exit_code,
            stdout=run.tail(),
            error_message=run.error_message,
        )

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.StatusResponse:  # noqa: N802
        return self._status(self._find(request.id, context))

    def List(self, request: pb.ListRequest, context: grpc.ServicerContext) -> pb.ListResponse:  # noqa: N802
        with self._lock:
            runs = list(self._executions.values())
        return pb.ListResponse(entries=[self._status(run) for run in runs])

    def Cancel(self, request: pb.CancelRequest, context: grpc.ServicerContext) -> pb.CancelResponse:  # noqa: N802
        self._find(request.id, context).control.cancel()
        return pb.CancelResponse()

    def Forget(self, request: pb.ForgetRequest, context: grpc.ServicerContext) -> pb.ForgetResponse:  # noqa: N802
        run = self._find(request.id, context)
        if run.state in (pb.EXECUTION_STATE_PENDING, pb.EXECUTION_STATE_RUNNING):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "cancel a running execution first")
        with self._lock:
            self._executions.pop(request.id, None)
        if run.log_path.parent == self.state_dir:  # a hosted execution's log is the attempt's
            run.log_path.unlink(missing_ok=True)
        return pb.ForgetResponse()

    def Health(self, request: pb.HealthRequest, context: grpc.ServicerContext) -> pb.HealthResponse:  # noqa: N802
        return pb.HealthResponse(healthy=True, message=f"{self.name} runtime server")

    def cancel_all(self, timeout: float = execute.KILL_GRACE_SECONDS + 1) -> None:
        """The server stops (SIGTERM): every running execution's tree is killed, and waited
        for, before the server exits."""
        with self._lock:
            runs = list(self._executions.values())
        for run in runs:
            run.control.terminate()
        for run in runs:
            if run.thread is not None:
                run.thread.join(timeout)
        if self.functions is not None:
            self.functions.close()


def serve(
    name: str, address: str, state_dir: Path | None = None
) -> tuple[grpc.Server, RuntimeServicer]:
    """Start the built-in server ``name`` (``bash``, ``python``) on ``address``
    (``unix:/path`` or ``127.0.0.1:port``); returns the started server and its servicer, whose
    ``functions`` is the ``FunctionRuntime`` servicer served beside it."""
    directory = state_dir or Path(tempfile.mkdtemp(prefix=f"runtime-{name}-"))
    directory.mkdir(parents=True, exist_ok=True)
    servicer = RuntimeServicer(name, BUILT_IN[name], directory)
    # a function call holds a thread while it runs (and an Unregister while it drains)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    pb_grpc.add_RuntimeServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    servicer.functions = FunctionRuntimeServicer(name, directory)
    pb_grpc.add_FunctionRuntimeServicer_to_server(servicer.functions, server)  # type: ignore[no-untyped-call]
    if server.add_insecure_port(address) == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    return server, servicer
