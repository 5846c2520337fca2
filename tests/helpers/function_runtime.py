"""A stand-in for runtimed's dataplane for gateway tests: it speaks the dataplane's frames
(``runtimed.protocol``) on a unix socket, echoes an invocation, or answers what its input asks
(``abort:<CODE>:<details>``, ``raise``, ``sleep:<seconds>``), and records every request with the
key and fence it carried (as ``metadata``, under the names runtimed's protocol gives them)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from runtimed.protocol import (
    ATTEMPT_METADATA,
    DATAPLANE_KEY_METADATA,
    POD_UID_METADATA,
    decode_request,
    encode_response,
    frame_length,
)
from runtimed.runtime_server import runtime_pb2


@dataclass
class Received:
    request: runtime_pb2.InvokeFunctionRequest
    metadata: dict[str, str]


@dataclass
class EchoFunctions:
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: bytes) -> bytes:
        call = decode_request(body)
        request = runtime_pb2.InvokeFunctionRequest()
        request.ParseFromString(call.message)
        metadata = {
            DATAPLANE_KEY_METADATA: call.key,
            ATTEMPT_METADATA: str(call.attempt),
            POD_UID_METADATA: call.pod_uid,
        }
        with self.lock:
            self.received.append(Received(request, metadata))
        data = bytes(request.input)
        if data.startswith(b"abort:"):
            _, code, details = data.decode().split(":", 2)
            return encode_response(grpc.StatusCode[code].value[0], details.encode())
        if data == b"raise":
            return encode_response(grpc.StatusCode.UNKNOWN.value[0], b"the handler raised")
        if data.startswith(b"sleep:"):
            time.sleep(float(data.split(b":", 1)[1]))
        response = runtime_pb2.InvokeFunctionResponse(
            registration=request.registration,
            invocation_id=request.invocation_id,
            output=data,
            content_type=request.content_type,
            outputs={"bytes": str(len(data))},
        )
        return encode_response(0, response.SerializeToString())

    def last(self) -> Received:
        with self.lock:
            return self.received[-1]


def _read(connection: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


@dataclass
class FunctionServer:
    functions: EchoFunctions
    address: str  # unix:/path, as runtimed reports its dataplane
    listener: socket.socket
    directory: Path
    connections: list[socket.socket] = field(default_factory=list)

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while (header := _read(connection, 4)) is not None:
                body = _read(connection, frame_length(header))
                if body is None:
                    return
                connection.sendall(self.functions.answer(body))

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_function_server() -> FunctionServer:
    """A dataplane stand-in on a unix socket (a short path: sun_path is 108 bytes)."""
    directory = Path(tempfile.mkdtemp(prefix="fn", dir="/tmp"))
    path = directory / "dataplane.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    server = FunctionServer(EchoFunctions(), f"unix:{path}", listener, directory)
    threading.Thread(target=server.serve, daemon=True).start()
    return server
