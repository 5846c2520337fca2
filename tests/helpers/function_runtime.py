"""A real ``executor.v1.FunctionRuntime`` gRPC server for tests: it echoes an invocation, or
answers what its input asks (``abort:<CODE>:<details>``, ``raise``, ``sleep:<seconds>``), and
records every request with its metadata."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from runtimed.runtime_server import runtime_pb2, runtime_pb2_grpc


@dataclass
class Received:
    request: runtime_pb2.InvokeFunctionRequest
    metadata: dict[str, str]


@dataclass
class EchoFunctions(runtime_pb2_grpc.FunctionRuntimeServicer):
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def InvokeFunction(self, request, context):  # noqa: N802 - the gRPC method's name
        with self.lock:
            self.received.append(Received(request, dict(context.invocation_metadata())))
        data = bytes(request.input)
        if data.startswith(b"abort:"):
            _, code, details = data.decode().split(":", 2)
            context.abort(grpc.StatusCode[code], details)
        if data == b"raise":
            raise RuntimeError("the handler raised")
        if data.startswith(b"sleep:"):
            time.sleep(float(data.split(b":", 1)[1]))
        return runtime_pb2.InvokeFunctionResponse(
            registration=request.registration,
            invocation_id=request.invocation_id,
            output=data,
            content_type=request.content_type,
            outputs={"bytes": str(len(data))},
        )

    def last(self) -> Received:
        with self.lock:
            return self.received[-1]


@dataclass
class FunctionServer:
    functions: EchoFunctions
    address: str  # unix:/path, as runtimed reports its dataplane
    server: grpc.Server
    directory: Path

    def stop(self) -> None:
        self.server.stop(grace=None).wait(5)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_function_server() -> FunctionServer:
    """A FunctionRuntime server on a unix socket (a short path: sun_path is 108 bytes)."""
    directory = Path(tempfile.mkdtemp(prefix="fn", dir="/tmp"))
    address = f"unix:{directory}/dataplane.sock"
    functions = EchoFunctions()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=(
            ("grpc.max_receive_message_length", 2 << 20),
            ("grpc.max_send_message_length", 2 << 20),
        ),
    )
    runtime_pb2_grpc.add_FunctionRuntimeServicer_to_server(functions, server)
    server.add_insecure_port(address)
    server.start()
    return FunctionServer(functions, address, server, directory)
