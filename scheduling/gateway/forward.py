"""One invocation to the runtimed that serves the Run: gRPC
``executor.v1.FunctionRuntime/InvokeFunction`` at the pod's dataplane address, with the
dataplane key and the fence (attempt, pod uid) as metadata, sent once and never retried after
dispatch (the outcome of a call cut short is unknown: running it again is the caller's call).

One ``grpc.aio`` channel per address and event loop, kept open with keep-alive pings, so a warm
invocation costs one HTTP/2 stream. The gRPC status a runtimed answers becomes the HTTP answer
``status_for`` tells.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

import grpc
from grpc import aio

from runtimed.protocol import (
    ATTEMPT_METADATA,
    DATAPLANE_KEY_METADATA,
    MAX_INVOKE_BYTES,
    POD_UID_METADATA,
)
from runtimed.runtime_server import runtime_pb2
from scheduling import dataplane

METHOD = "/executor.v1.FunctionRuntime/InvokeFunction"
# the response carries the output (MAX_INVOKE_BYTES at most) and the bounded outputs map
ENVELOPE_BYTES = 256 * 1024
# runtimed answers DEADLINE_EXCEEDED itself at timeout_millis; the call's own deadline is a
# little later so that answer, not a cut connection, is what the caller sees
DEADLINE_GRACE_SECONDS = 2.0
CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", MAX_INVOKE_BYTES + ENVELOPE_BYTES),
    ("grpc.max_receive_message_length", MAX_INVOKE_BYTES + ENVELOPE_BYTES),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
Invoke = aio.UnaryUnaryMultiCallable[
    runtime_pb2.InvokeFunctionRequest, runtime_pb2.InvokeFunctionResponse
]
MAX_CHANNELS = 512  # per event loop: addresses beyond close the oldest channel


@dataclass(frozen=True, slots=True)
class Target:
    """Where and as what to invoke: the pod's address and the fence runtimed checks."""

    address: str
    run_uid: str
    attempt: int
    pod_uid: str
    namespace: str  # whose dataplane key opens the pod (scheduling.dataplane)


class Channels:
    """The open channels of one event loop, by address."""

    def __init__(self) -> None:
        self._calls: dict[str, Invoke] = {}
        self._channels: dict[str, aio.Channel] = {}

    def call(self, address: str) -> Invoke:
        found = self._calls.get(address)
        if found is not None:
            return found
        while len(self._channels) >= MAX_CHANNELS:
            oldest = next(iter(self._channels))
            self.drop(oldest)
        channel = aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        found = channel.unary_unary(
            METHOD,
            request_serializer=runtime_pb2.InvokeFunctionRequest.SerializeToString,
            response_deserializer=runtime_pb2.InvokeFunctionResponse.FromString,
        )
        self._channels[address], self._calls[address] = channel, found
        return found

    def drop(self, address: str) -> None:
        """Forget an address's channel (its pod moved or went away); calls on it finish."""
        self._calls.pop(address, None)
        channel = self._channels.pop(address, None)
        if channel is not None:
            task = asyncio.get_running_loop().create_task(channel.close(grace=None))
            _closing.add(task)
            task.add_done_callback(_closing.discard)

    async def close(self) -> None:
        channels = list(self._channels.values())
        self._channels.clear()
        self._calls.clear()
        for channel in channels:
            await channel.close()


_closing: set[asyncio.Task[None]] = set()
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


async def invoke(
    target: Target,
    invocation_id: str,
    payload: bytes,
    content_type: str,
    timeout_seconds: float,
) -> runtime_pb2.InvokeFunctionResponse:
    """The runtimed's answer; a ``grpc.aio.AioRpcError`` when it answered an error or could
    not be reached."""
    request = runtime_pb2.InvokeFunctionRequest(
        registration=runtime_pb2.FunctionRegistration(run_uid=target.run_uid),
        invocation_id=invocation_id,
        input=payload,
        content_type=content_type,
        timeout_millis=int(timeout_seconds * 1000),
    )
    metadata = (
        (DATAPLANE_KEY_METADATA, _dataplane_key(target.namespace)),
        (ATTEMPT_METADATA, str(target.attempt)),
        (POD_UID_METADATA, target.pod_uid),
    )
    call = channels().call(target.address)
    answer: runtime_pb2.InvokeFunctionResponse = await call(
        request, metadata=metadata, timeout=timeout_seconds + DEADLINE_GRACE_SECONDS
    )
    return answer


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


def status_for(error: grpc.aio.AioRpcError) -> Mapped:
    code = error.code()
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in (error.details() or ""):
        return RESPONSE_TOO_LARGE  # this side's receive limit, not the function's concurrency
    return GRPC_STATUS.get(code, BAD_GATEWAY)
