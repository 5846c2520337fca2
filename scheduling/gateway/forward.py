"""One invocation to the runtimed that serves the Run: an ``InvokeFunctionRequest`` in the
dataplane's frames (``runtimed.protocol``) at the pod's dataplane address, with the dataplane
key of the Run's namespace and the fence (attempt, pod uid), sent once and never retried after
dispatch (the outcome of a call cut short is unknown: running it again is the caller's call).

Connections are persistent, one call at a time on each: every event loop keeps, per address,
the idle ones to reuse (at most ``MAX_IDLE`` each), and opens another when all are busy; a
connection whose call failed or timed out is closed, never reused. The gRPC status a runtimed
answers becomes the HTTP answer ``status_for`` tells.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

import grpc

from runtimed.protocol import (
    FrameError,
    decode_response,
    encode_request,
    frame_length,
)
from runtimed.runtime_server import runtime_pb2
from scheduling import dataplane

# runtimed answers DEADLINE_EXCEEDED itself at timeout_millis; the call's own deadline is a
# little later so that answer, not a cut connection, is what the caller sees
DEADLINE_GRACE_SECONDS = 2.0
CONNECT_SECONDS = 5.0
MAX_IDLE = 64  # idle connections kept per address and event loop
MAX_ADDRESSES = 512  # per event loop: addresses beyond drop the oldest's idle connections
CODES = {code.value[0]: code for code in grpc.StatusCode}


class UpstreamError(Exception):
    """runtimed answered a gRPC status, or could not be reached (UNAVAILABLE)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@dataclass(frozen=True, slots=True)
class Target:
    """Where and as what to invoke: the pod's address and the fence runtimed checks."""

    address: str
    run_uid: str
    attempt: int
    pod_uid: str
    namespace: str  # whose dataplane key opens the pod (scheduling.dataplane)


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Channels:
    """The idle connections of one event loop, by address."""

    def __init__(self) -> None:
        self._idle: dict[str, list[Connection]] = {}

    async def acquire(self, address: str) -> Connection:
        idle = self._idle.get(address) or []
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return await asyncio.wait_for(_connect(address), CONNECT_SECONDS)

    def release(self, address: str, connection: Connection) -> None:
        idle = self._idle.get(address)
        if idle is None:
            while len(self._idle) >= MAX_ADDRESSES:
                self.drop(next(iter(self._idle)))
            idle = self._idle[address] = []
        if len(idle) < MAX_IDLE:
            idle.append(connection)
        else:
            connection[1].close()

    def drop(self, address: str) -> None:
        """Close an address's idle connections (its pod moved or went away)."""
        for _, writer in self._idle.pop(address, []):
            writer.close()

    async def close(self) -> None:
        for address in list(self._idle):
            self.drop(address)


async def _connect(address: str) -> Connection:
    if address.startswith("unix:"):
        return await asyncio.open_unix_connection(address[len("unix:") :])
    host, _, port = address.rpartition(":")
    return await asyncio.open_connection(host.strip("[]"), int(port))


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Channels] = (
    weakref.WeakKeyDictionary()
)


def channels() -> Channels:
    loop = asyncio.get_running_loop()
    found = _by_loop.get(loop)
    if found is None:
        found = _by_loop[loop] = Channels()
    return found


_keys: dict[str, str] = {}


def _dataplane_key(namespace: str) -> str:
    key = _keys.get(namespace)
    if key is None:
        key = _keys[namespace] = dataplane.key(namespace)
    return key


def reset() -> None:
    """Derive the dataplane keys again (tests change the settings they come from)."""
    _keys.clear()


async def _exchange(connection: Connection, frame: bytes) -> bytes:
    reader, writer = connection
    writer.write(frame)
    await writer.drain()
    body = await reader.readexactly(frame_length(await reader.readexactly(4)))
    return body


async def invoke(
    target: Target,
    invocation_id: str,
    payload: bytes,
    content_type: str,
    timeout_seconds: float,
) -> runtime_pb2.InvokeFunctionResponse:
    """The runtimed's answer; an ``UpstreamError`` when it answered an error or could not be
    reached."""
    request = runtime_pb2.InvokeFunctionRequest(
        registration=runtime_pb2.FunctionRegistration(run_uid=target.run_uid),
        invocation_id=invocation_id,
        input=payload,
        content_type=content_type,
        timeout_millis=int(timeout_seconds * 1000),
    )
    frame = encode_request(
        _dataplane_key(target.namespace),
        target.attempt,
        target.pod_uid,
        request.SerializeToString(),
    )
    pool = channels()
    try:
        connection = await pool.acquire(target.address)
    except (TimeoutError, OSError) as exc:
        raise UpstreamError(grpc.StatusCode.UNAVAILABLE, f"cannot connect: {exc}") from None
    try:
        body = await asyncio.wait_for(
            _exchange(connection, frame), timeout_seconds + DEADLINE_GRACE_SECONDS
        )
        code, answer = decode_response(body)
    except TimeoutError:
        connection[1].close()
        raise UpstreamError(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer in time") from None
    except (OSError, asyncio.IncompleteReadError, FrameError) as exc:
        connection[1].close()
        raise UpstreamError(grpc.StatusCode.UNAVAILABLE, f"the connection failed: {exc}") from None
    except BaseException:  # cancelled (the client went away): the connection is mid-call
        connection[1].close()
        raise
    pool.release(target.address, connection)
    if code != 0:
        status = CODES.get(code, grpc.StatusCode.UNKNOWN)
        raise UpstreamError(status, answer.decode("utf-8", "replace"))
    response = runtime_pb2.InvokeFunctionResponse()
    try:
        response.ParseFromString(answer)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        raise UpstreamError(grpc.StatusCode.INTERNAL, "runtimed's answer is not readable") from None
    return response


# --- what a gRPC status means to the caller ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mapped:
    code: int  # the HTTP status
    reason: str  # the Status reason
    message: str  # what the caller is told (the runtimed's details follow it)
    retry_after: int = 0
    forget_run: bool = False  # the cached ownership is stale: read the Run again
    forget_address: bool = False  # the pod's address may be stale: read it again


GRPC_STATUS: dict[grpc.StatusCode, Mapped] = {
    grpc.StatusCode.INVALID_ARGUMENT: Mapped(400, "BadRequest", "the function refused the input"),
    grpc.StatusCode.NOT_FOUND: Mapped(
        404, "NotFound", "the Run's pod does not serve it", forget_run=True
    ),
    grpc.StatusCode.FAILED_PRECONDITION: Mapped(
        503,
        "ServiceUnavailable",
        "the function is not ready on its pod (re-registering or draining)",
        retry_after=1,
        forget_run=True,
    ),
    grpc.StatusCode.RESOURCE_EXHAUSTED: Mapped(
        429, "TooManyRequests", "the function is busy with another invocation", retry_after=1
    ),
    grpc.StatusCode.DEADLINE_EXCEEDED: Mapped(504, "Timeout", "the invocation timed out"),
    grpc.StatusCode.UNAVAILABLE: Mapped(
        503,
        "ServiceUnavailable",
        "the Run's pod cannot be reached",
        retry_after=1,
        forget_address=True,
    ),
    grpc.StatusCode.UNKNOWN: Mapped(502, "HandlerError", "the function failed"),
    grpc.StatusCode.INTERNAL: Mapped(502, "HandlerError", "the function failed"),
    grpc.StatusCode.ABORTED: Mapped(502, "HandlerError", "the invocation was aborted"),
}
BAD_GATEWAY = Mapped(502, "BadGateway", "the Run's pod answered the invocation with an error")
RESPONSE_TOO_LARGE = Mapped(502, "BadGateway", "the function's response is over the size limit")


def status_for(error: UpstreamError) -> Mapped:
    return GRPC_STATUS.get(error.code(), BAD_GATEWAY)
