"""Function mode for the built-in servers: ``executor.v1.FunctionRuntime`` (docs/runtime-server.md,
"Function mode", states the rules; kruntimes' function-runtime contract is their source).

Registrations are kept by Run UID, one generation each: the Run's ``registration_attempt``
fences generations, and the opaque ``registration_id`` a registration answers is what every
later call names, so a stale caller can never touch a newer generation. One invocation runs
at a time per registration; a second is refused (RESOURCE_EXHAUSTED), never queued.

Every rule lives in the plain methods (:meth:`FunctionRuntimeServicer.register`, ``status``,
``invoke``, ``unregister``), which raise :class:`FunctionError`; the gRPC methods only turn
that into the call's status. The runtimed hosting the server calls the plain methods directly
(or the gRPC ones with a :class:`LocalContext`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn, TypeVar

import grpc

from ..outputs import OutputsError, check_limits
from . import runtime_pb2 as pb
from . import runtime_pb2_grpc as pb_grpc
from .function_adapters import (
    MAX_INPUT_BYTES,
    BashFunction,
    FunctionAdapter,
    InitError,
    Invocation,
    InvocationError,
    PythonFunction,
    bounded,
)

log = logging.getLogger("runtimed.runtime_server.functions")

REGISTERING = pb.FUNCTION_REGISTRATION_STATE_REGISTERING
READY = pb.FUNCTION_REGISTRATION_STATE_READY
DRAINING = pb.FUNCTION_REGISTRATION_STATE_DRAINING
FAILED = pb.FUNCTION_REGISTRATION_STATE_FAILED

MAX_ID_BYTES = 128  # run_uid, registration_id, invocation_id
MAX_REGISTRATIONS = 256
DEFAULT_INVOKE_SECONDS = 60.0  # timeout_millis 0
MAX_INVOKE_SECONDS = 15 * 60.0  # a longer timeout_millis is cut to this
MAX_DRAIN_SECONDS = 15 * 60.0
KILLED_SECONDS = 10.0  # how long a killed call may take to hand its registration back
RETIRED_KEPT = 4096  # unregistered (run, attempt) fences remembered

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Code = grpc.StatusCode
T = TypeVar("T")


class FunctionError(Exception):
    """A function-mode call refused or failed: ``code`` is its gRPC status, ``message`` why."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code, self.message = code, message


def _refuse(code: grpc.StatusCode, message: str) -> NoReturn:
    raise FunctionError(code, message)


class LocalContext:
    """The context for a gRPC method called in process: ``abort`` raises FunctionError."""

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        raise FunctionError(code, details)

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return False

    def time_remaining(self) -> float | None:
        return None


@dataclass(eq=False)
class Registration:
    run_uid: str
    attempt: int
    digest: str
    id: str
    log_path: Path  # the handler's prints and stderr; deleted when the registration is
    adapter: FunctionAdapter | None = None
    state: pb.FunctionRegistrationState = REGISTERING
    current: Invocation | None = None
    last_activity: int = 0  # unix ns; 0 until a call has started
    fatal_error: str = ""
    initialized: threading.Event = field(default_factory=threading.Event)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def ref(self) -> pb.FunctionRegistration:
        return pb.FunctionRegistration(run_uid=self.run_uid, registration_id=self.id)

    def fail(self, message: str) -> None:
        with self.lock:
            if self.state in (REGISTERING, READY):
                self.state, self.fatal_error = FAILED, bounded(message)

    def stop_call(self, call: Invocation | None, why: str) -> None:
        """Kill ``call`` if it is still the one in flight (a late cancel kills nothing)."""
        with self.lock:
            if call is None or self.current is not call or self.adapter is None:
                return
            call.stopped = call.stopped or why
            self.adapter.kill()


@dataclass(frozen=True)
class Handler:
    """A validated handler: Python ``module.function`` or bash ``file.function``."""

    target: str  # the module, or the .sh file relative to working_dir
    function: str


def parse_handler(runtime: str, handler: str, working_dir: Path) -> Handler:
    target, dot, function = handler.rpartition(".")
    if not dot or not target or not _NAME.fullmatch(function):
        _refuse(Code.INVALID_ARGUMENT, f"handler: {handler!r} is not {_handler_form(runtime)}")
    if runtime == "python":
        if not all(part.isidentifier() for part in target.split(".")):
            _refuse(Code.INVALID_ARGUMENT, f"handler: {target!r} is not a Python module name")
        return Handler(target, function)
    path = PurePosixPath(f"{target}.sh")
    if path.is_absolute() or any(part in ("..", ".", "") for part in target.split("/")):
        _refuse(Code.INVALID_ARGUMENT, f"handler: {target}.sh is not a path under working_dir")
    resolved = (working_dir / path).resolve()
    if not resolved.is_relative_to(working_dir.resolve()):
        _refuse(Code.INVALID_ARGUMENT, f"handler: {target}.sh leads out of working_dir")
    return Handler(str(path), function)


def _handler_form(runtime: str) -> str:
    return "module.function" if runtime == "python" else "file.function (file.sh in working_dir)"


def validate_register(runtime: str, request: pb.RegisterFunctionRequest) -> Handler:
    _check_id("run_uid", request.run_uid)
    if request.registration_attempt < 1:
        _refuse(Code.INVALID_ARGUMENT, "registration_attempt: 1 or more")
    working_dir = Path(request.working_dir)
    if not working_dir.is_absolute() or not working_dir.is_dir():
        _refuse(Code.INVALID_ARGUMENT, "working_dir: an existing absolute directory")
    if not _DIGEST.fullmatch(request.registration_digest):
        _refuse(Code.INVALID_ARGUMENT, "registration_digest: sha256: and 64 lowercase hex digits")
    if request.idle_timeout_seconds < 0:
        _refuse(Code.INVALID_ARGUMENT, "idle_timeout_seconds: 0 or more")
    for name, value in request.env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            _refuse(Code.INVALID_ARGUMENT, f"env: {name!r} is not a valid variable")
    return parse_handler(runtime, request.handler, working_dir)


def _check_id(name: str, value: str) -> None:
    if not value or len(value.encode()) > MAX_ID_BYTES:
        _refuse(Code.INVALID_ARGUMENT, f"{name}: 1-{MAX_ID_BYTES} bytes")


def _unix_nano() -> int:
    return time.time_ns()


class FunctionRuntimeServicer(pb_grpc.FunctionRuntimeServicer):
    """The function registrations of one built-in server (``bash`` or ``python``)."""

    def __init__(self, runtime: str, state_dir: Path) -> None:
        if runtime not in ("bash", "python"):
            raise ValueError(f"no function adapter for {runtime!r}")
        self.runtime, self.state_dir = runtime, state_dir
        self._lock = threading.Lock()
        self._registrations: dict[str, Registration] = {}
        self._retired: OrderedDict[str, int] = OrderedDict()  # run_uid -> attempt unregistered

    # -- the rules ---------------------------------------------------------------------------

    def register(self, request: pb.RegisterFunctionRequest) -> pb.RegisterFunctionResponse:
        handler = validate_register(self.runtime, request)
        uid, attempt = request.run_uid, request.registration_attempt
        with self._lock:
            current = self._registrations.get(uid)
            if current is not None and current.attempt == attempt:
                if current.digest != request.registration_digest:
                    _refuse(
                        Code.ALREADY_EXISTS,
                        f"registration attempt {attempt} of run {uid} has another digest",
                    )
                found: Registration | None = current
            else:
                newest = max(current.attempt if current else 0, self._retired.get(uid, 0))
                if attempt < newest or (current is None and attempt == newest):
                    _refuse(
                        Code.FAILED_PRECONDITION,
                        f"registration attempt {attempt} of run {uid} is stale "
                        f"(attempt {newest} was registered)",
                    )
                if current is None and len(self._registrations) >= MAX_REGISTRATIONS:
                    _refuse(Code.RESOURCE_EXHAUSTED, "too many function registrations")
                found = None
                registration_id = f"reg_{uuid.uuid4().hex}"
                registration = Registration(
                    uid,
                    attempt,
                    request.registration_digest,
                    registration_id,
                    self.state_dir / f"function-{registration_id}.log",
                )
                self._registrations[uid] = registration
        if found is not None:  # a retried call: the registration as it is, not re-initialised
            found.initialized.wait()
            with found.lock:
                return pb.RegisterFunctionResponse(registration=found.ref(), state=found.state)
        if current is not None:
            self._release(current, cancel=True, drain_seconds=0)
        self._initialize(registration, handler, request)
        with registration.lock:
            return pb.RegisterFunctionResponse(
                registration=registration.ref(), state=registration.state
            )

    def _initialize(
        self, registration: Registration, handler: Handler, request: pb.RegisterFunctionRequest
    ) -> None:
        working_dir, env = Path(request.working_dir), dict(request.env)
        adapter: FunctionAdapter
        if self.runtime == "python":
            adapter = PythonFunction(
                working_dir,
                handler.target,
                handler.function,
                env,
                registration.log_path,
                registration.id,
                registration.fail,
            )
        else:
            adapter = BashFunction(
                working_dir,
                working_dir / handler.target,
                handler.function,
                env,
                registration.log_path,
                registration.id,
            )
        with registration.lock:
            if registration.state != REGISTERING:  # superseded or released already
                registration.initialized.set()
                return
            registration.adapter = adapter  # from here on, a release closes it
        try:
            adapter.start()
        except InitError as exc:
            registration.fail(str(exc))
            log.info("function %s: %s", registration.run_uid, exc)
        except Exception as exc:  # noqa: BLE001 - the registration fails, the server stays up
            log.exception("function %s", registration.run_uid)
            registration.fail(f"the function cannot be loaded: {exc}")
        else:
            with registration.lock:
                released = registration.state != REGISTERING
                if not released:
                    registration.state = READY
            if released:  # released while it started: what it started goes too
                adapter.close()
        finally:
            registration.initialized.set()

    def _find(self, ref: pb.FunctionRegistration) -> Registration:
        _check_id("registration.run_uid", ref.run_uid)
        _check_id("registration.registration_id", ref.registration_id)
        with self._lock:
            registration = self._registrations.get(ref.run_uid)
        if registration is None:
            _refuse(Code.NOT_FOUND, f"no function registration for run {ref.run_uid}")
        if registration.id != ref.registration_id:
            _refuse(Code.FAILED_PRECONDITION, f"registration {ref.registration_id} is stale")
        return registration

    def status(self, request: pb.FunctionStatusRequest) -> pb.FunctionStatusResponse:
        registration = self._find(request.registration)
        with registration.lock:
            return pb.FunctionStatusResponse(
                registration=registration.ref(),
                state=registration.state,
                in_flight=0 if registration.current is None else 1,
                last_activity_unix_nano=registration.last_activity,
                fatal_error=registration.fatal_error,
            )

    def invoke(
        self, request: pb.InvokeFunctionRequest, context: Any = None
    ) -> pb.InvokeFunctionResponse:
        """One call. ``context`` (a gRPC one) bounds it by the caller's deadline, and kills
        it when the caller goes away."""
        registration = self._find(request.registration)
        invocation_id = request.invocation_id or uuid.uuid4().hex
        if len(invocation_id.encode()) > MAX_ID_BYTES:
            _refuse(Code.INVALID_ARGUMENT, f"invocation_id: at most {MAX_ID_BYTES} bytes")
        if len(request.input) > MAX_INPUT_BYTES:
            _refuse(Code.INVALID_ARGUMENT, f"input: at most {MAX_INPUT_BYTES} bytes")
        if request.timeout_millis < 0:
            _refuse(Code.INVALID_ARGUMENT, "timeout_millis: 0 (the default) or more")
        seconds = (
            request.timeout_millis / 1000 if request.timeout_millis else DEFAULT_INVOKE_SECONDS
        )
        seconds = min(seconds, MAX_INVOKE_SECONDS)
        remaining = context.time_remaining() if context is not None else None
        if remaining is not None:
            seconds = min(seconds, remaining)
        call = Invocation(
            invocation_id, request.input, request.content_type, time.monotonic() + seconds
        )
        with registration.lock:
            if registration.state != READY:
                name = pb.FunctionRegistrationState.Name(registration.state)
                _refuse(Code.FAILED_PRECONDITION, f"the registration is {name}, not READY")
            if registration.current is not None:
                _refuse(Code.RESOURCE_EXHAUSTED, "an invocation is in flight (one at a time)")
            registration.current = call
            registration.last_activity = _unix_nano()
            adapter = registration.adapter
        assert adapter is not None
        try:
            if context is not None:
                context.add_callback(lambda: registration.stop_call(call, "the caller went away"))
            output = adapter.invoke(call)
            try:
                check_limits(output.outputs)
            except OutputsError as exc:
                _refuse(Code.INTERNAL, f"outputs: {exc.message}")
        except InvocationError as exc:
            raise FunctionError(exc.code, exc.message) from None
        finally:
            with registration.lock:
                registration.current = None
                registration.last_activity = _unix_nano()
                registration.lock.notify_all()
        return pb.InvokeFunctionResponse(
            registration=registration.ref(),
            invocation_id=invocation_id,
            output=output.data,
            content_type=output.content_type,
            outputs=output.outputs,
        )

    def unregister(self, request: pb.UnregisterFunctionRequest) -> pb.UnregisterFunctionResponse:
        ref = request.registration
        if request.drain_timeout_millis < 0:
            _refuse(Code.INVALID_ARGUMENT, "drain_timeout_millis: 0 or more")
        try:
            registration = self._find(ref)
        except FunctionError as exc:
            if exc.code != Code.NOT_FOUND:
                raise
            return pb.UnregisterFunctionResponse(registration=ref)  # absent: done already
        drain = min(request.drain_timeout_millis / 1000, MAX_DRAIN_SECONDS)
        self._release(registration, cancel=request.cancel_in_flight, drain_seconds=drain)
        with self._lock:
            if self._registrations.get(registration.run_uid) is registration:
                del self._registrations[registration.run_uid]
            newest = max(self._retired.pop(registration.run_uid, 0), registration.attempt)
            self._retired[registration.run_uid] = newest
            while len(self._retired) > RETIRED_KEPT:
                self._retired.popitem(last=False)
        return pb.UnregisterFunctionResponse(registration=registration.ref())

    def _release(self, registration: Registration, *, cancel: bool, drain_seconds: float) -> None:
        """DRAINING (no new call), the call in flight waited for (``drain_seconds``) or
        killed, then every process of the registration killed and its log deleted."""
        with registration.lock:
            if registration.state != FAILED:
                registration.state = DRAINING
            if not cancel:
                registration.lock.wait_for(lambda: registration.current is None, drain_seconds)
            registration.stop_call(registration.current, "the registration was unregistered")
            registration.lock.wait_for(lambda: registration.current is None, KILLED_SECONDS)
            adapter = registration.adapter
        if adapter is not None:
            adapter.close()
        registration.log_path.unlink(missing_ok=True)

    def close(self) -> None:
        """The server stops: every registration's processes are killed."""
        with self._lock:
            registrations = list(self._registrations.values())
            self._registrations.clear()
        for registration in registrations:
            self._release(registration, cancel=True, drain_seconds=0)

    # -- gRPC --------------------------------------------------------------------------------

    def RegisterFunction(  # noqa: N802
        self, request: pb.RegisterFunctionRequest, context: grpc.ServicerContext
    ) -> pb.RegisterFunctionResponse:
        return _answer(context, lambda: self.register(request))

    def FunctionStatus(  # noqa: N802
        self, request: pb.FunctionStatusRequest, context: grpc.ServicerContext
    ) -> pb.FunctionStatusResponse:
        return _answer(context, lambda: self.status(request))

    def InvokeFunction(  # noqa: N802
        self, request: pb.InvokeFunctionRequest, context: grpc.ServicerContext
    ) -> pb.InvokeFunctionResponse:
        return _answer(context, lambda: self.invoke(request, context))

    def UnregisterFunction(  # noqa: N802
        self, request: pb.UnregisterFunctionRequest, context: grpc.ServicerContext
    ) -> pb.UnregisterFunctionResponse:
        return _answer(context, lambda: self.unregister(request))


def _answer(context: Any, call: Callable[[], T]) -> T:
    try:
        return call()
    except FunctionError as exc:
        context.abort(exc.code, exc.message)
        raise  # abort raises; for a context whose abort does not
