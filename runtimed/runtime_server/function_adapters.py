"""How the built-in servers run a registered function: a warm Python worker, or bash per call.

Both run in a process group and session of their own, marked with ``KRUNTIME_STEP_ID`` = the
registration id, so a kill takes the whole tree (:mod:`runtimed.proctree` finds what left the
group), and runtimed's exit kills whatever is left. Handler prints and stderr go to the
registration's log file, never into the output.

- :class:`PythonFunction` starts one worker per registration (:mod:`.python_function_worker`),
  which imports the handler once; each call is one frame each way over dedicated pipes. A call
  that times out, is cancelled, or kills the worker costs the worker: it is killed and a fresh
  one started at once in the background (the registration stays READY; the next call waits for
  it). A fresh worker that cannot import the handler any more makes the registration FAILED.
- :class:`BashFunction` checks at registration that sourcing ``file.sh`` defines the function,
  then runs ``bash -c 'source "$1"; "$2" "$3"' _ file.sh function payload`` per call: the
  payload is one positional argument, never shell source; stdout is the output.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

import grpc

from .. import procgroup, proctree
from . import python_function_worker as wire

MAX_INPUT_BYTES = 1 << 20
MAX_OUTPUT_BYTES = 1 << 20
MESSAGE_BYTES = 4096  # fatal_error and an invocation's error message
INIT_SECONDS = 120.0  # importing the handler / sourcing the bash file
# Linux refuses one argv string of MAX_ARG_STRLEN (32 pages) or more: a bash payload's bound
MAX_BASH_PAYLOAD_BYTES = 32 * 4096 - 1
PAYLOAD_SLICE_SECONDS = 0.05  # how often a bash call whose stdout stays open checks its exit

WORKER_SOURCE = Path(wire.__file__).read_text()
BASH = shutil.which("bash") or "/bin/bash"  # the server's, whatever PATH the Run's env has
BASH_CHECK = 'source "$1" && declare -F -- "$2" >/dev/null'
BASH_INVOKE = 'source "$1" || exit; "$2" "$3"'
JSON = "application/json"
BYTES = "application/octet-stream"


def bounded(text: str, limit: int = MESSAGE_BYTES) -> str:
    return text.encode("utf-8", "replace")[:limit].decode("utf-8", "ignore")


class InitError(Exception):
    """The handler cannot be loaded: a permanent registration failure (``fatal_error``)."""


class InvocationError(Exception):
    """One invocation failed; ``code`` is its gRPC status (the registration is unchanged)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, bounded(message)


@dataclass
class Invocation:
    """One call in flight; ``stopped`` says why it was killed from outside (cancel)."""

    id: str
    input: bytes
    content_type: str
    deadline: float  # time.monotonic()
    stopped: str = ""


@dataclass(frozen=True)
class Output:
    data: bytes
    content_type: str
    outputs: dict[str, str] = field(default_factory=dict)


class FunctionAdapter(Protocol):
    def start(self) -> None:
        """Load the handler; raise InitError when it never can be."""

    def invoke(self, call: Invocation) -> Output:
        """Run one call to its end, its deadline, or :meth:`kill`; InvocationError if it fails."""

    def kill(self) -> None:
        """Kill the call in flight now (its invoke raises); safe at any time, from any thread."""

    def close(self) -> None:
        """Kill everything the registration runs, for good."""


def is_json(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() in ("", JSON)


def _kill_tree(process: subprocess.Popen[bytes], step_id: str) -> None:
    procgroup.signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)
    proctree.kill_step(proctree.StepTree(step_id, process.pid))


def _spawn(
    argv: list[str], cwd: Path, env: dict[str, str], step_id: str, log: IO[bytes], **options: object
) -> subprocess.Popen[bytes]:
    procgroup.become_subreaper()  # what leaves the group comes back to be killed and reaped
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        argv,
        cwd=cwd,
        env={**env, proctree.STEP_ID_VARIABLE: step_id},
        stdin=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
        **options,
    )


def _read_exact(fd: int, size: int, deadline: float) -> bytes | None:
    """``size`` bytes from ``fd`` before ``deadline``: None at EOF, TimeoutError after it."""
    chunks, left = [], size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Worker:
    def __init__(self, process: subprocess.Popen[bytes], requests: int, responses: int) -> None:
        self.process, self.requests, self.responses = process, requests, responses

    def close_pipes(self) -> None:
        for fd in (self.requests, self.responses):
            with contextlib.suppress(OSError):
                os.close(fd)


class PythonFunction:
    def __init__(
        self,
        working_dir: Path,
        module: str,
        function: str,
        env: dict[str, str],
        log_path: Path,
        step_id: str,
        on_fatal: Callable[[str], None],
    ) -> None:
        self.working_dir, self.module, self.function = working_dir, module, function
        self.env, self.log_path, self.step_id, self.on_fatal = env, log_path, step_id, on_fatal
        self._lock = threading.Lock()  # held by a call, and by a worker's start
        self._worker: _Worker | None = None
        self._starting: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._fatal = ""

    def start(self) -> None:
        with self._lock:
            self._start_locked()

    def _start_locked(self) -> None:
        if self._closed:
            raise InitError("the registration was released")
        requests_r, requests_w = os.pipe()
        responses_r, responses_w = os.pipe()
        argv = [sys.executable, "-c", WORKER_SOURCE, str(requests_r), str(responses_w)]
        argv += [str(self.working_dir), self.module, self.function, str(MAX_OUTPUT_BYTES)]
        try:
            with open(self.log_path, "ab") as log:
                process = _spawn(
                    argv, self.working_dir, self.env, self.step_id, log,
                    stdout=log, pass_fds=(requests_r, responses_w),
                )  # fmt: skip
        except OSError as exc:
            for fd in (requests_r, requests_w, responses_r, responses_w):
                os.close(fd)
            raise InitError(f"cannot start the Python worker: {exc}") from exc
        os.close(requests_r)
        os.close(responses_w)
        worker = _Worker(process, requests_w, responses_r)
        self._starting = process
        try:
            status, body, _ = self._response(worker, time.monotonic() + INIT_SECONDS)
        except (TimeoutError, EOFError) as exc:
            self._discard(worker)
            if self._closed:
                raise InitError("the registration was released") from exc
            if isinstance(exc, TimeoutError):
                raise InitError(
                    f"importing {self.module} did not finish within {INIT_SECONDS:.0f}s"
                ) from exc
            raise InitError(f"the Python worker exited while importing {self.module}") from exc
        finally:
            self._starting = None
        if status != wire.READY:
            self._discard(worker)
            name = f"{self.module}.{self.function}"
            raise InitError(f"cannot load the handler {name}: {body.decode('utf-8', 'replace')}")
        if self._closed:
            self._discard(worker)
            raise InitError("the registration was released")
        self._worker = worker

    @staticmethod
    def _response(worker: _Worker, deadline: float) -> tuple[int, bytes, bytes]:
        header = _read_exact(worker.responses, wire.RESPONSE.size, deadline)
        if header is None:
            raise EOFError
        status, size, outputs_size = wire.RESPONSE.unpack(header)
        if size > MAX_OUTPUT_BYTES or outputs_size > MAX_OUTPUT_BYTES:
            raise EOFError  # not our worker's frame: treat as a broken worker
        rest = _read_exact(worker.responses, size + outputs_size, deadline)
        if rest is None:
            raise EOFError
        return status, rest[:size], rest[size:]

    def _discard(self, worker: _Worker) -> None:
        _kill_tree(worker.process, self.step_id)
        worker.close_pipes()

    def invoke(self, call: Invocation) -> Output:
        with self._lock:
            if self._fatal:
                raise InvocationError(grpc.StatusCode.FAILED_PRECONDITION, self._fatal)
            if self._worker is not None and self._worker.process.poll() is not None:
                self._discard(self._worker)  # it died between calls: this call gets a fresh one
                self._worker = None
            if self._worker is None:
                self._restart_locked()
            worker = self._worker
            assert worker is not None
            kind = wire.KIND_JSON if is_json(call.content_type) else wire.KIND_BYTES
            try:
                wire.write_all(
                    worker.requests, wire.REQUEST.pack(kind, len(call.input)) + call.input
                )
                status, body, outputs = self._response(worker, call.deadline)
            except (TimeoutError, EOFError, OSError) as exc:
                self._worker = None
                self._discard(worker)
                self._restart_later()
                raise self._lost(call, worker, exc) from None
        return self._output(status, body, outputs)

    def _lost(self, call: Invocation, worker: _Worker, exc: Exception) -> InvocationError:
        if call.stopped:
            return InvocationError(grpc.StatusCode.CANCELLED, call.stopped)
        if isinstance(exc, TimeoutError):
            return InvocationError(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "the invocation did not finish in time; its worker was killed",
            )
        code = worker.process.returncode
        return InvocationError(
            grpc.StatusCode.UNKNOWN, f"the handler's process exited (code {code}) during the call"
        )

    @staticmethod
    def _output(status: int, body: bytes, outputs: bytes) -> Output:
        if status == wire.OK_JSON:
            found = json.loads(outputs) if outputs else {}
            return Output(body, JSON, found)
        if status == wire.OK_BYTES:
            return Output(body, BYTES)
        message = body.decode("utf-8", "replace")
        if status == wire.BAD_INPUT:
            raise InvocationError(grpc.StatusCode.INVALID_ARGUMENT, message)
        if status == wire.TOO_LARGE:
            raise InvocationError(
                grpc.StatusCode.INTERNAL,
                f"the handler's output is {message} bytes; the limit is {MAX_OUTPUT_BYTES} bytes",
            )
        if status == wire.BAD_RESULT:
            raise InvocationError(grpc.StatusCode.UNKNOWN, message)
        raise InvocationError(grpc.StatusCode.UNKNOWN, f"the handler raised {message}")

    def _restart_locked(self) -> None:
        try:
            self._start_locked()
        except InitError as exc:
            if not self._closed:
                self._fatal = bounded(str(exc))
                self.on_fatal(self._fatal)
            raise InvocationError(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from exc

    def _restart_later(self) -> None:
        """A fresh worker, started now so the next call finds it warm."""

        def restart() -> None:
            with self._lock:
                if self._worker is None and not self._closed and not self._fatal:
                    with contextlib.suppress(InvocationError):
                        self._restart_locked()

        if not self._closed:
            threading.Thread(target=restart, name=f"restart-{self.step_id}", daemon=True).start()

    def kill(self) -> None:
        for process in (self._starting, self._worker.process if self._worker else None):
            if process is not None:
                procgroup.signal_group(process.pid, signal.SIGKILL)

    def close(self) -> None:
        self._closed = True
        self.kill()
        with self._lock:  # the call in flight has ended (killed), a start has given up
            worker, self._worker = self._worker, None
            if worker is not None:
                self._discard(worker)


class BashFunction:
    def __init__(
        self,
        working_dir: Path,
        script: Path,
        function: str,
        env: dict[str, str],
        log_path: Path,
        step_id: str,
    ) -> None:
        self.working_dir, self.script, self.function = working_dir, script, function
        self.env, self.log_path, self.step_id = env, log_path, step_id
        self._process: subprocess.Popen[bytes] | None = None
        self._closed = False

    def _run(self, script: str, *args: str | bytes) -> subprocess.Popen[bytes]:
        argv: list[str | bytes] = [BASH, "-c", script, "_", str(self.script), self.function]
        with open(self.log_path, "ab") as log:
            process = _spawn(
                [*argv, *args], self.working_dir, self.env, self.step_id, log,  # type: ignore[list-item]
                stdout=subprocess.PIPE,
            )  # fmt: skip
        self._process = process
        if self._closed:
            self.kill()
        return process

    def start(self) -> None:
        if not self.script.is_file():
            raise InitError(f"{self.script.name} is not a file in the working directory")
        start = self.log_path.stat().st_size if self.log_path.exists() else 0
        process = self._run(BASH_CHECK)
        try:
            code = process.wait(INIT_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            self._end(process)
        if code != 0:
            why = "did not finish" if code is None else f"exited with {code}"
            raise InitError(
                f"sourcing {self.script.name} does not define the function {self.function!r} "
                f"(it {why}): {self._log_since(start)}".rstrip(": ")
            )

    def invoke(self, call: Invocation) -> Output:
        if b"\0" in call.input:
            raise InvocationError(grpc.StatusCode.INVALID_ARGUMENT, "a bash payload has no NUL")
        if len(call.input) > MAX_BASH_PAYLOAD_BYTES:
            raise InvocationError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"a bash handler's payload is one argument: at most {MAX_BASH_PAYLOAD_BYTES} bytes",
            )
        start = self.log_path.stat().st_size if self.log_path.exists() else 0
        process = self._run(BASH_INVOKE, call.input)
        if call.stopped:  # cancelled while it started
            self.kill()
        try:
            output = self._collect(process, call)
        finally:
            self._end(process)
        if call.stopped:
            raise InvocationError(grpc.StatusCode.CANCELLED, call.stopped)
        if process.returncode != 0:
            raise InvocationError(
                grpc.StatusCode.UNKNOWN,
                f"the handler exited with {process.returncode}: {self._log_since(start)}",
            )
        return Output(output, BYTES)

    def _collect(self, process: subprocess.Popen[bytes], call: Invocation) -> bytes:
        """stdout to its end, bounded; a call whose bash exited but whose stdout a leftover
        child holds open ends at bash's exit."""
        assert process.stdout is not None
        fd, size = process.stdout.fileno(), 0
        chunks: list[bytes] = []
        while True:
            wait = call.deadline - time.monotonic()
            if wait <= 0:
                raise InvocationError(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    "the invocation did not finish in time and was killed",
                )
            if not select.select([fd], [], [], min(wait, PAYLOAD_SLICE_SECONDS))[0]:
                if process.poll() is not None:
                    return b"".join(chunks)
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                process.wait()
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_OUTPUT_BYTES:
                raise InvocationError(
                    grpc.StatusCode.INTERNAL,
                    f"the handler's output is over {MAX_OUTPUT_BYTES} bytes (the limit)",
                )

    def _end(self, process: subprocess.Popen[bytes]) -> None:
        """Nothing of a call outlives it."""
        _kill_tree(process, self.step_id)
        if process.stdout is not None:
            process.stdout.close()
        self._process = None

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                data = log.read()
        except OSError:
            return ""
        return bounded(data[-1024:].decode("utf-8", "replace").strip(), 1024)

    def kill(self) -> None:
        process = self._process
        if process is not None:
            procgroup.signal_group(process.pid, signal.SIGKILL)

    def close(self) -> None:
        self._closed = True
        self.kill()
