"""A blocking client of runtimed's dataplane (the frames of ``runtimed.protocol``), as the
gateway speaks it, for tests: one connection, one call at a time."""

from __future__ import annotations

import socket

import grpc

from runtimed.protocol import decode_response, encode_request, frame_length
from runtimed.runtime_server import runtime_pb2 as pb


class DataplaneError(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


CODES = {code.value[0]: code for code in grpc.StatusCode}


class DataplaneClient:
    def __init__(self, address: str, timeout: float = 20.0) -> None:
        if address.startswith("unix:"):
            self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.socket.settimeout(timeout)
            self.socket.connect(address[len("unix:") :])
        else:
            host, port = address.rsplit(":", 1)
            self.socket = socket.create_connection((host, int(port)), timeout=timeout)

    def call(self, key: str, attempt: int, pod_uid: str, message: bytes) -> tuple[int, bytes]:
        self.socket.sendall(encode_request(key, attempt, pod_uid, message))
        body = self._read(frame_length(self._read(4)))
        return decode_response(body)

    def invoke(
        self, request: pb.InvokeFunctionRequest, *, key: str, attempt: int, pod_uid: str
    ) -> pb.InvokeFunctionResponse:
        code, payload = self.call(key, attempt, pod_uid, request.SerializeToString())
        if code != 0:
            raise DataplaneError(CODES[code], payload.decode())
        response = pb.InvokeFunctionResponse()
        response.ParseFromString(payload)
        return response

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.socket.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the dataplane closed the connection")
            data += chunk
        return data

    def close(self) -> None:
        self.socket.close()
