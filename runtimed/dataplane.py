"""runtimed's dataplane: the gateway's invocations of the functions this pod serves.

It answers invocations (``executor.v1.InvokeFunctionRequest`` messages in the frames of
``runtimed.protocol``, on persistent connections: a thread per connection, one call at a time
on each) and checks nothing about the caller but the shared dataplane key: authorization is the
gateway's (runtimed stays authorization-agnostic). Each call names the Run by UID and carries
the fence (the attempt and the pod incarnation the gateway routed by); a call for another
attempt or pod is refused FAILED_PRECONDITION, one for a Run this pod does not serve NOT_FOUND,
so a stale route never reaches a newer registration. The invocation goes to the Runtime
Server with the registration ID runtimed holds; its answer (or its gRPC status) goes back as
is, and only bounded counters remember it (``functions.Stats``).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import socket
import threading
from pathlib import Path

import grpc

from .functions import FunctionTable
from .protocol import (
    MAX_INVOCATION_ID_BYTES,
    MAX_INVOKE_BYTES,
    MAX_INVOKE_TIMEOUT_SECONDS,
    DataplaneRequest,
    FrameError,
    decode_request,
    encode_response,
    frame_length,
)
from .runtime_server import runtime_pb2 as pb

log = logging.getLogger("runtimed.dataplane")

MAX_CONNECTIONS = 256  # beyond: a new connection is closed at once


class Refused(Exception):
    """The dataplane's own refusal: a gRPC status code and its details."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


class Dataplane:
    """What a call is checked against and sent to: the pod's served functions and its key."""

    def __init__(self, table: FunctionTable, key: str, pod_uid: str) -> None:
        self.table, self.key, self.pod_uid = table, key.encode(), pod_uid

    def answer(self, body: bytes) -> bytes:
        """One request frame's body → the response frame."""
        try:
            response = self.invoke(decode_request(body))
        except Refused as refused:
            return encode_response(refused.code.value[0], refused.details.encode()[:4096])
        return encode_response(grpc.StatusCode.OK.value[0], response.SerializeToString())

    def invoke(self, call: DataplaneRequest) -> pb.InvokeFunctionResponse:
        if not self.key or not hmac.compare_digest(call.key.encode(), self.key):
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, "the dataplane key is missing or wrong")
        request = pb.InvokeFunctionRequest()
        try:
            request.ParseFromString(call.message)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError, whatever the runtime
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT, "not an InvokeFunctionRequest"
            ) from None
        uid = request.registration.run_uid
        serving = self.table.get(uid)
        if serving is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"this pod serves no function Run {uid}")
        if call.attempt != serving.attempt or call.pod_uid != self.pod_uid:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"this pod serves attempt {serving.attempt} of Run {uid} on pod {self.pod_uid}, "
                f"not attempt {call.attempt} on pod {call.pod_uid or '?'}",
            )
        if len(request.invocation_id.encode()) > MAX_INVOCATION_ID_BYTES:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the invocation ID is longer than {MAX_INVOCATION_ID_BYTES} bytes",
            )
        if len(request.input) > MAX_INVOKE_BYTES:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the input is larger than {MAX_INVOKE_BYTES} bytes",
            )
        request.registration.CopyFrom(serving.registration)
        limit = MAX_INVOKE_TIMEOUT_SECONDS * 1000
        if request.timeout_millis <= 0 or request.timeout_millis > limit:
            request.timeout_millis = limit
        try:
            response: pb.InvokeFunctionResponse = serving.stub.InvokeFunction(
                request, timeout=request.timeout_millis / 1000 + 1
            )
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
            serving.stats.record(f"{code.name}: {details}")
            raise Refused(code, details) from None
        if len(response.output) > MAX_INVOKE_BYTES:
            serving.stats.record("RESOURCE_EXHAUSTED: the output is larger than 1 MiB")
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the function's output is larger than {MAX_INVOKE_BYTES} bytes",
            )
        serving.stats.record()
        return response


def _read_exact(connection: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class Server:
    """The dataplane's listener: an accepting thread and a thread per connection."""

    def __init__(self, address: str, plane: Dataplane) -> None:
        self.address, self.plane = address, plane
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self.listener = self._listen(address)
        self._thread = threading.Thread(target=self._accept, name="dataplane", daemon=True)
        self._thread.start()

    @staticmethod
    def _listen(address: str) -> socket.socket:
        if address.startswith("unix:"):
            path = Path(address[len("unix:") :])
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or path.is_symlink():
                os.unlink(path)  # a socket a previous start left behind
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            os.chmod(path, 0o600)
        else:
            port = int(address.rsplit(":", 1)[-1])
            listener = (
                socket.create_server(
                    ("", port), family=socket.AF_INET6, dualstack_ipv6=True, reuse_port=False
                )
                if socket.has_dualstack_ipv6()
                else socket.create_server(("", port))
            )
        listener.listen(128)
        return listener

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed by stop()
            with self._lock:
                if len(self._connections) >= MAX_CONNECTIONS:
                    connection.close()
                    continue
                self._connections.add(connection)
            if connection.family != socket.AF_UNIX:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(
                target=self._serve, args=(connection,), name="dataplane-call", daemon=True
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            while not self._stopped.is_set():
                header = _read_exact(connection, 4)
                if header is None:
                    return
                body = _read_exact(connection, frame_length(header))
                if body is None:
                    return
                connection.sendall(self.plane.answer(body))
        except FrameError as exc:
            log.warning("closing a dataplane connection: %s", exc)
        except OSError:
            pass  # the gateway went away
        finally:
            with self._lock:
                self._connections.discard(connection)
            with contextlib.suppress(OSError):
                connection.close()

    def stop(self, grace: float | None = None) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self.address.startswith("unix:"):
            with contextlib.suppress(OSError):
                os.unlink(self.address[len("unix:") :])


def listen_address(address: str) -> str:
    """Where to bind for an advertised address: a unix socket as is, host:port on every
    interface of the pod (the gateway reaches it at the pod's IP)."""
    if address.startswith("unix:"):
        return address
    return f"[::]:{address.rsplit(':', 1)[-1]}"


def serve(address: str, table: FunctionTable, key: str, pod_uid: str) -> Server:
    """Start the dataplane on ``address`` (``unix:/path`` or ``host:port``)."""
    server = Server(address, Dataplane(table, key, pod_uid))
    log.info("dataplane listening on %s", address)
    return server
