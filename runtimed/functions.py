"""A function-mode attempt: prepare, register with the pod's Runtime Server, serve, unregister.

The attempt holds its execution slot for as long as it serves (the scheduler counted it when it
bound the Run; a Ready function Run keeps one ``runs`` unit). It ends, and unregisters first,
when

- the Run is cancelled or deleted (``Cancelled``; in-flight work is cancelled),
- the pod shuts down (``PodTerminating``: the control plane may register it elsewhere),
- no invocation was active for ``mode.function.idleTimeoutSeconds`` (``Timeout``, reason
  ``IdleTimeout``; the Runtime Server's ``FunctionStatus`` owns the activity clock, so nothing
  per invocation is written anywhere),
- ``spec.timeout`` passed since the attempt started (``Timeout``: the reservation's lifetime),
- the Runtime Server reports the registration FAILED (``RuntimeError``, which the retry policy
  retries by default: a new attempt registers again).

A registration the server refuses to build (unknown handler, import error, a server without
``FunctionRuntime``) fails the attempt ``PrepareSource``: registering again cannot fix it.
While it serves, the attempt is in the pod's :class:`FunctionTable`, where the dataplane
(``runtimed.dataplane``) finds it for each invocation.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import grpc

from .execute import CANCELLED, FAILED, TIMEOUT, Clock, Result, StepControl
from .protocol import FunctionStats, Reason
from .reporting import rfc3339
from .runtime_host import FunctionCalls
from .runtime_server import runtime_pb2 as pb

log = logging.getLogger("runtimed.functions")

REGISTER_TIMEOUT_SECONDS = 60.0
RPC_TIMEOUT_SECONDS = 10.0
WATCH_SECONDS = 0.1  # how often the attempt looks at its control (cancel, pod stop)
STATUS_SECONDS = 1.0  # how often it asks the Runtime Server for health and activity
DRAIN_MILLIS = 5_000
RECENT_ERRORS = 5
ERROR_TEXT = 256
RATE_WINDOW_SECONDS = 60


@dataclass
class Stats:
    """Bounded invocation figures of one serving function (the heartbeat carries them)."""

    ready_since: datetime
    invocations: int = 0
    errors: int = 0
    recent_errors: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=RECENT_ERRORS)
    )
    # invocations per second of the last minute: one counter per second, a ring of 60
    _buckets: list[int] = field(default_factory=lambda: [0] * RATE_WINDOW_SECONDS)
    _stamps: list[int] = field(default_factory=lambda: [0] * RATE_WINDOW_SECONDS)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, error: str | None = None, now: float | None = None) -> None:
        second = int(now if now is not None else time.monotonic())
        slot = second % RATE_WINDOW_SECONDS
        with self._lock:
            self.invocations += 1
            if self._stamps[slot] != second:
                self._stamps[slot], self._buckets[slot] = second, 0
            self._buckets[slot] += 1
            if error is not None:
                self.errors += 1
                self.recent_errors.append(error[:ERROR_TEXT])

    def per_second(self, now: float | None = None) -> float:
        second = int(now if now is not None else time.monotonic())
        with self._lock:
            total = sum(
                count
                for stamp, count in zip(self._stamps, self._buckets, strict=True)
                if second - RATE_WINDOW_SECONDS < stamp <= second
            )
        return round(total / RATE_WINDOW_SECONDS, 3)

    def snapshot(self) -> FunctionStats:
        with self._lock:
            errors = list(self.recent_errors)
            invocations, failed = self.invocations, self.errors
        return {
            "invocations": invocations,
            "errors": failed,
            "perSecond": self.per_second(),
            "recentErrors": errors,
            "readySince": rfc3339(self.ready_since),
        }


@dataclass
class Serving:
    """One registered function Run of this pod."""

    uid: str
    attempt: int
    registration: pb.FunctionRegistration
    stub: FunctionCalls
    stats: Stats
    timeout_seconds: float | None  # the rest of spec.timeout when the invocation starts
    deadline: float | None = None  # monotonic end of the reservation (spec.timeout)


class FunctionTable:
    """The functions this pod serves, by Run UID: the dataplane's routing table."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._serving: dict[str, Serving] = {}

    def add(self, serving: Serving) -> None:
        with self._lock:
            self._serving[serving.uid] = serving

    def remove(self, uid: str, attempt: int) -> None:
        with self._lock:
            current = self._serving.get(uid)
            if current is not None and current.attempt == attempt:
                del self._serving[uid]

    def get(self, uid: str) -> Serving | None:
        with self._lock:
            return self._serving.get(uid)

    def stats(self) -> dict[tuple[str, int], FunctionStats]:
        with self._lock:
            serving = list(self._serving.values())
        return {(s.uid, s.attempt): s.stats.snapshot() for s in serving}


@dataclass(frozen=True)
class Registration:
    """What RegisterFunction needs, as the attempt prepared it."""

    uid: str
    attempt: int
    working_dir: str
    handler: str
    env: Mapping[str, str]
    idle_timeout_seconds: int | None
    digest: str
    timeout_seconds: float | None  # spec.timeout: the reservation's lifetime


class RegistrationRefused(Exception):
    """The Runtime Server will not serve this function (PrepareSource)."""


def _rpc_error(exc: grpc.RpcError) -> str:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    name = code.name if code is not None else "UNKNOWN"
    return f"{name}: {details}"


def register(stub: FunctionCalls, spec: Registration) -> pb.FunctionRegistration:
    """Register (idempotent for the same attempt and digest); RegistrationRefused when the
    server cannot serve it, grpc.RpcError when it could not be asked."""
    request = pb.RegisterFunctionRequest(
        run_uid=spec.uid,
        registration_attempt=spec.attempt,
        working_dir=spec.working_dir,
        handler=spec.handler,
        env=dict(spec.env),
        idle_timeout_seconds=spec.idle_timeout_seconds or 0,
        registration_digest=spec.digest,
    )
    try:
        response: pb.RegisterFunctionResponse = stub.RegisterFunction(
            request, timeout=REGISTER_TIMEOUT_SECONDS
        )
    except grpc.RpcError as exc:
        if exc.code() in (
            grpc.StatusCode.UNIMPLEMENTED,
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.ALREADY_EXISTS,
            grpc.StatusCode.FAILED_PRECONDITION,
        ):
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                raise RegistrationRefused(
                    "the Runtime's server does not serve functions (executor.v1.FunctionRuntime "
                    "is not implemented)"
                ) from None
            raise RegistrationRefused(
                f"the Runtime Server refused the function: {_rpc_error(exc)}"
            ) from None
        raise
    if response.state == pb.FUNCTION_REGISTRATION_STATE_FAILED:
        fatal = _fatal_error(stub, response.registration)
        raise RegistrationRefused(f"the function could not be loaded: {fatal}")
    return response.registration


def _fatal_error(stub: FunctionCalls, registration: pb.FunctionRegistration) -> str:
    try:
        status: pb.FunctionStatusResponse = stub.FunctionStatus(
            pb.FunctionStatusRequest(registration=registration), timeout=RPC_TIMEOUT_SECONDS
        )
    except grpc.RpcError as exc:
        return _rpc_error(exc)
    return status.fatal_error or "the Runtime Server gave no reason"


def unregister(stub: FunctionCalls, registration: pb.FunctionRegistration, *, cancel: bool) -> None:
    try:
        stub.UnregisterFunction(
            pb.UnregisterFunctionRequest(
                registration=registration,
                cancel_in_flight=cancel,
                drain_timeout_millis=DRAIN_MILLIS,
            ),
            timeout=RPC_TIMEOUT_SECONDS + DRAIN_MILLIS / 1000,
        )
    except grpc.RpcError as exc:  # the server forgets it anyway when it goes
        log.warning("unregistering Run %s failed: %s", registration.run_uid, _rpc_error(exc))


@dataclass
class Serve:
    """Serves one registered function until it must end; returns how it ended."""

    spec: Registration
    stub: FunctionCalls
    table: FunctionTable
    control: StepControl
    clock: Clock
    on_ready: Callable[[], object]
    watch_seconds: float = WATCH_SECONDS
    status_seconds: float = STATUS_SECONDS

    def run(self, start: datetime) -> Result:
        try:
            registration = register(self.stub, self.spec)
        except RegistrationRefused as exc:
            return Result(FAILED, Reason.PREPARE_SOURCE, str(exc), None, start, self.clock())
        except grpc.RpcError as exc:
            return Result(
                FAILED,
                Reason.RUNTIME_ERROR,
                f"the Runtime Server could not register the function: {_rpc_error(exc)}",
                None,
                start,
                self.clock(),
            )
        began = time.monotonic()
        deadline = began + self.spec.timeout_seconds if self.spec.timeout_seconds else None
        serving = Serving(
            self.spec.uid,
            self.spec.attempt,
            registration,
            self.stub,
            Stats(self.clock()),
            self.spec.timeout_seconds,
            deadline,
        )
        self.table.add(serving)
        cancel_in_flight = True
        try:
            self.on_ready()
            ended = self._serve(serving, began, start)
            # a cancel or the reservation's end stops the call in flight; idle has none, and a
            # pod shutting down lets it finish (the unregister's drain)
            cancel_in_flight = ended.reason in (Reason.CANCELLED, Reason.TIMEOUT)
        finally:
            self.table.remove(serving.uid, serving.attempt)  # no new invocation reaches it
            unregister(self.stub, registration, cancel=cancel_in_flight)
        return ended

    def _serve(self, serving: Serving, began: float, start: datetime) -> Result:
        idle = self.spec.idle_timeout_seconds
        next_status = 0.0
        while True:
            if self.control.cancelled:
                if self.control.terminating:
                    return self._end(
                        FAILED, Reason.POD_TERMINATING, "the Runtime Pod is shutting down", start
                    )
                return self._end(
                    CANCELLED, Reason.CANCELLED, "the function Run was cancelled", start
                )
            now = time.monotonic()
            if serving.deadline is not None and now >= serving.deadline:
                return self._end(
                    TIMEOUT,
                    Reason.TIMEOUT,
                    f"the function served for its timeout ({self.spec.timeout_seconds:g}s)",
                    start,
                )
            if now >= next_status:
                next_status = now + self.status_seconds
                ended = self._check(serving, began, idle, start)
                if ended is not None:
                    return ended
            time.sleep(self.watch_seconds)

    def _check(
        self, serving: Serving, began: float, idle: int | None, start: datetime
    ) -> Result | None:
        try:
            status: pb.FunctionStatusResponse = self.stub.FunctionStatus(
                pb.FunctionStatusRequest(registration=serving.registration),
                timeout=RPC_TIMEOUT_SECONDS,
            )
        except grpc.RpcError as exc:
            if exc.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION):
                return self._end(
                    FAILED,
                    Reason.RUNTIME_ERROR,
                    f"the Runtime Server lost the registration: {_rpc_error(exc)}",
                    start,
                )
            log.warning("FunctionStatus of Run %s failed: %s", serving.uid, _rpc_error(exc))
            return None  # a slow or busy server: asked again at the next look
        if status.state == pb.FUNCTION_REGISTRATION_STATE_FAILED:
            return self._end(
                FAILED,
                Reason.RUNTIME_ERROR,
                f"the function failed in the Runtime Server: {status.fatal_error or 'no reason'}",
                start,
            )
        if not idle or status.in_flight > 0:
            return None
        # the server's clock of the last activity; before any, the registration's start
        wall_now = time.time()
        last = status.last_activity_unix_nano / 1e9 if status.last_activity_unix_nano else None
        quiet = wall_now - last if last is not None else time.monotonic() - began
        if quiet >= idle:
            return self._end(
                TIMEOUT,
                Reason.IDLE_TIMEOUT,
                f"no invocation for {idle}s (mode.function.idleTimeoutSeconds)",
                start,
            )
        return None

    def _end(self, phase: str, reason: str, message: str, start: datetime) -> Result:
        return Result(phase, reason, message, None, start, self.clock())
