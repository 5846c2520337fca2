"""The process that holds one registered Python function warm (function mode).

The Python adapter (:mod:`.function_adapters`) runs this file's source with ``python -c`` in
the registration's working directory and environment, so the handler's imports see the
working directory first and nothing of runtimed's package (the handler's environment is the
Run's, which need not make runtimed importable). Standard library only, for the same reason.

It imports ``module`` and resolves ``function`` once, answers a READY frame (or INIT_ERROR),
then serves one request at a time over two dedicated pipes (never stdin/stdout, which the
handler may print to: they go to the registration's log):

- request: ``>BI`` header (kind: 0 JSON, 1 bytes; body length), then the body;
- response: ``>BII`` header (status, body length, outputs length), the body, then the
  ``outputs`` mapping as JSON when the return value is a dict carrying one of str → str.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import sys
import traceback
from collections.abc import Callable
from typing import Any

REQUEST = struct.Struct(">BI")
RESPONSE = struct.Struct(">BII")
KIND_JSON, KIND_BYTES = 0, 1
READY, OK_JSON, OK_BYTES, HANDLER_ERROR, BAD_INPUT, TOO_LARGE, INIT_ERROR, BAD_RESULT = range(8)
MESSAGE_BYTES = 4096


def read_exact(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; None at the end of the stream (the server went away)."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, status: int, body: bytes = b"", outputs: bytes = b"") -> None:
    write_all(fd, RESPONSE.pack(status, len(body), len(outputs)) + body + outputs)


def describe(exc: BaseException) -> bytes:
    text = f"{type(exc).__name__}: {exc}"
    return text.encode("utf-8", "replace")[:MESSAGE_BYTES]


def outputs_of(value: Any) -> bytes:
    """The ``outputs`` of a returned dict, as JSON, when it maps str to str; else nothing."""
    if not isinstance(value, dict):
        return b""
    outputs = value.get("outputs")
    if not isinstance(outputs, dict) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in outputs.items()
    ):
        return b""
    return json.dumps(outputs, ensure_ascii=False).encode("utf-8")


def answer(
    function: Callable[[Any], Any], kind: int, body: bytes, limit: int
) -> tuple[int, bytes, bytes]:
    try:
        request: Any = json.loads(body) if kind == KIND_JSON else body
    except ValueError as exc:  # UnicodeDecodeError is one too
        return BAD_INPUT, f"the input is not JSON: {exc}".encode()[:MESSAGE_BYTES], b""
    try:
        value = function(request)
    except Exception as exc:  # noqa: BLE001 - the handler's failure is this invocation's result
        traceback.print_exc()  # to the registration's log
        return HANDLER_ERROR, describe(exc), b""
    if isinstance(value, bytes | bytearray):
        status, output, outputs = OK_BYTES, bytes(value), b""
    else:
        try:
            output = json.dumps(value, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            return BAD_RESULT, b"the handler's return value is not JSON: " + describe(exc), b""
        status, outputs = OK_JSON, outputs_of(value)
    if len(output) > limit:
        return TOO_LARGE, str(len(output)).encode(), b""
    return status, output, outputs


def main(argv: list[str]) -> int:
    requests, responses = int(argv[1]), int(argv[2])
    working_dir, module_name, function_name, limit = argv[3], argv[4], argv[5], int(argv[6])
    for fd in (requests, responses):  # the handler's own children must not hold them
        os.set_inheritable(fd, False)
    sys.path.insert(0, working_dir)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    try:
        function = getattr(importlib.import_module(module_name), function_name)
        if not callable(function):
            raise TypeError(f"{module_name}.{function_name} is not callable")
    except BaseException as exc:  # noqa: BLE001 - SystemExit in an import is a failure too
        traceback.print_exc()
        send(responses, INIT_ERROR, describe(exc))
        return 1
    send(responses, READY)
    while True:
        header = read_exact(requests, REQUEST.size)
        if header is None:
            return 0
        kind, size = REQUEST.unpack(header)
        body = read_exact(requests, size)
        if body is None:
            return 0
        send(responses, *answer(function, kind, body, limit))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
