"""runtimed's dataplane: the gateway's invocations of the functions this pod serves.

It serves ``executor.v1.FunctionRuntime/InvokeFunction`` (nothing else) on the pod's dataplane
address, and checks nothing about the caller but the shared dataplane key: authorization is the
gateway's (runtimed stays authorization-agnostic). Each call names the Run by UID and carries
the fence (the attempt and the pod incarnation the gateway routed by); a call for another
attempt or pod is refused FAILED_PRECONDITION, one for a Run this pod does not serve NOT_FOUND,
so a stale route never reaches a newer registration. The invocation goes to the Runtime
Server with the registration ID runtimed holds; its answer (or gRPC error) goes back as is,
and only bounded counters remember it (``functions.Stats``).
"""

from __future__ import annotations

import hmac
import logging
import os
from concurrent import futures
from pathlib import Path

import grpc

from .functions import FunctionTable
from .protocol import (
    ATTEMPT_METADATA,
    DATAPLANE_KEY_METADATA,
    MAX_INVOCATION_ID_BYTES,
    MAX_INVOKE_BYTES,
    MAX_INVOKE_TIMEOUT_SECONDS,
    POD_UID_METADATA,
)
from .runtime_server import runtime_pb2 as pb
from .runtime_server import runtime_pb2_grpc as pb_grpc

log = logging.getLogger("runtimed.dataplane")

WORKERS = 32  # invocations served at once (each waits on its Runtime Server)
MESSAGE_BYTES = MAX_INVOKE_BYTES + 64 * 1024  # the payload and the envelope around it


class DataplaneServicer(pb_grpc.FunctionRuntimeServicer):
    def __init__(self, table: FunctionTable, key: str, pod_uid: str) -> None:
        self.table, self.key, self.pod_uid = table, key.encode(), pod_uid

    def InvokeFunction(  # noqa: N802
        self, request: pb.InvokeFunctionRequest, context: grpc.ServicerContext
    ) -> pb.InvokeFunctionResponse:
        metadata = dict(context.invocation_metadata())
        if not self.key or not hmac.compare_digest(
            str(metadata.get(DATAPLANE_KEY_METADATA, "")).encode(), self.key
        ):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the dataplane key is missing or wrong")
        uid = request.registration.run_uid
        serving = self.table.get(uid)
        if serving is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"this pod serves no function Run {uid}")
        attempt = str(metadata.get(ATTEMPT_METADATA, ""))
        pod_uid = str(metadata.get(POD_UID_METADATA, ""))
        if attempt != str(serving.attempt) or pod_uid != self.pod_uid:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"this pod serves attempt {serving.attempt} of Run {uid} on pod {self.pod_uid}, "
                f"not attempt {attempt or '?'} on pod {pod_uid or '?'}",
            )
        if len(request.invocation_id.encode()) > MAX_INVOCATION_ID_BYTES:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the invocation ID is longer than {MAX_INVOCATION_ID_BYTES} bytes",
            )
        if len(request.input) > MAX_INVOKE_BYTES:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the input is larger than {MAX_INVOKE_BYTES} bytes",
            )
        forwarded = pb.InvokeFunctionRequest()
        forwarded.CopyFrom(request)
        forwarded.registration.CopyFrom(serving.registration)
        remaining = context.time_remaining()
        limit = float(MAX_INVOKE_TIMEOUT_SECONDS)
        if remaining is not None:
            limit = min(limit, remaining)
        if forwarded.timeout_millis <= 0 or forwarded.timeout_millis > limit * 1000:
            forwarded.timeout_millis = int(limit * 1000)
        try:
            response: pb.InvokeFunctionResponse = serving.stub.InvokeFunction(
                forwarded, timeout=limit + 1
            )
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
            serving.stats.record(f"{code.name}: {details}")
            context.abort(code, details)
        if len(response.output) > MAX_INVOKE_BYTES:
            serving.stats.record("RESOURCE_EXHAUSTED: the output is larger than 1 MiB")
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the function's output is larger than {MAX_INVOKE_BYTES} bytes",
            )
        serving.stats.record()
        return response


def listen_address(address: str) -> str:
    """Where to bind for an advertised address: a unix socket as is, host:port on every
    interface of the pod (the gateway reaches it at the pod's IP)."""
    if address.startswith("unix:"):
        return address
    port = address.rsplit(":", 1)[-1]
    return f"[::]:{port}"


def serve(address: str, table: FunctionTable, key: str, pod_uid: str) -> grpc.Server:
    """Start the dataplane on ``address`` (``unix:/path`` or ``host:port``)."""
    if address.startswith("unix:"):
        path = Path(address[len("unix:") :])
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            os.unlink(path)  # a socket a previous start left behind
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="dataplane"),
        options=[
            ("grpc.max_receive_message_length", MESSAGE_BYTES),
            ("grpc.max_send_message_length", MESSAGE_BYTES),
        ],
    )
    pb_grpc.add_FunctionRuntimeServicer_to_server(  # type: ignore[no-untyped-call]
        DataplaneServicer(table, key, pod_uid), server
    )
    if server.add_insecure_port(listen_address(address)) == 0:
        raise OSError(f"the dataplane cannot listen on {address}")
    server.start()
    log.info("dataplane listening on %s", address)
    return server
