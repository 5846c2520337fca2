"""Run one step (``bash <script> <args...>``, or what ``command`` made of a Run without source)
in its own process group with a clean environment.

The step sees only the Run's ``env`` plus the ``KRUNTIME_*`` identity variables (bash supplies
its default ``PATH``). Its stdout and stderr go, merged, to ``<run dir>/attempt-<n>.log`` (and
to the log shipper), with the secret values of ``Step.masked`` replaced by ``***`` first. At the
deadline the whole group gets SIGTERM, then SIGKILL after a grace period; after any ending,
whatever the step left behind in its group is killed too.
"""

from __future__ import annotations

import io
import logging
import shutil
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, cast

from . import masking, procgroup, proctree
from .protocol import Phase, Reason
from .staging import PrepareError

log = logging.getLogger("runtimed.execute")

SUCCEEDED, FAILED, TIMEOUT, CANCELLED = (
    Phase.SUCCEEDED,
    Phase.FAILED,
    Phase.TIMEOUT,
    Phase.CANCELLED,
)
KILL_GRACE_SECONDS = 5.0
READER_JOIN_SECONDS = 5.0
CHUNK = 65536

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Result:
    phase: str
    reason: str
    message: str
    exit_code: int | None
    start: datetime
    end: datetime


class StepControl:
    """Lets another thread cancel a step: SIGTERM to its whole group now, SIGKILL after a grace.

    Only signals are sent from here; the executing thread keeps waiting for (and reaping) its
    own child, so the exit status is never stolen.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pgid: int | None = None
        self.cancelled = False
        # the stop comes from the pod shutting down, not from the Run's own cancel
        self.terminating = False

    def attach(self, pgid: int) -> bool:
        """Record the step's group; True when a cancel already arrived (kill it at once)."""
        with self._lock:
            self._pgid = pgid
            return self.cancelled

    def detach(self) -> None:
        with self._lock:
            self._pgid = None

    def cancel(self, grace: float = KILL_GRACE_SECONDS) -> bool:
        """Request the cancel; False if one was already requested."""
        with self._lock:
            if self.cancelled:
                return False
            self.cancelled = True
            pgid = self._pgid
        if pgid is not None:
            procgroup.signal_group(pgid, signal.SIGTERM)
            timer = threading.Timer(grace, self._kill_if_attached, args=(pgid,))
            timer.daemon = True
            timer.start()
        return True

    def terminate(self, grace: float = KILL_GRACE_SECONDS) -> bool:
        """Stop the step because the pod shuts down: the attempt ends PodTerminating (an
        infrastructure failure the retry policy may retry), not Cancelled."""
        with self._lock:
            self.terminating = True
        return self.cancel(grace)

    def _kill_if_attached(self, pgid: int) -> None:
        with self._lock:
            still = self._pgid == pgid
        if still:
            procgroup.signal_group(pgid, signal.SIGKILL)


@dataclass(frozen=True)
class Step:
    command: tuple[str, ...]  # the program (bash or sh, found on PATH) and its arguments
    cwd: Path
    env: Mapping[str, str]
    log_path: Path
    timeout: float | None = None
    # a copy of every output chunk (the log shipper); must not block
    on_output: Callable[[bytes], object] | None = None
    control: StepControl | None = None
    # secret values replaced by *** in the output before it is stored or shipped
    masked: tuple[bytes, ...] = ()


def identity_env(
    *,
    run_name: str,
    run_namespace: str,
    run_uid: str,
    attempt: int,
    pod_name: str,
    pod_uid: str,
    workspace: Path,
    run_dir: Path,
) -> dict[str, str]:
    return {
        "KRUNTIME_RUN_NAME": run_name,
        "KRUNTIME_RUN_NAMESPACE": run_namespace,
        "KRUNTIME_RUN_UID": run_uid,
        "KRUNTIME_ATTEMPT": str(attempt),
        "KRUNTIME_POD_NAME": pod_name,
        # the pod's UID names it on this machine (a name may be reused, as a StatefulSet's)
        "KRUNTIME_POD_UID": pod_uid,
        "KRUNTIME_WORKSPACE": str(workspace),
        "KRUNTIME_RUN_DIR": str(run_dir),
    }


def step_env(run_env: Iterable[tuple[str, str]], identity: Mapping[str, str]) -> dict[str, str]:
    """The Run's variables (last one wins), then runtimed's ``KRUNTIME_*`` ones on top."""
    env = dict(run_env)
    env.update(identity)
    return env


def working_directory(workspace: Path, working_dir: str | None) -> Path:
    """The step's cwd: the workspace root, or ``working_dir`` under it (created if missing)."""
    root = workspace.resolve()
    if not working_dir:
        return root
    if Path(working_dir).is_absolute():
        raise PrepareError(f"workingDir {working_dir!r} must be relative to the workspace")
    target = (root / working_dir).resolve()
    if not target.is_relative_to(root):
        raise PrepareError(f"workingDir {working_dir!r} resolves outside the workspace")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrepareError(f"workingDir {working_dir!r} cannot be created: {exc}") from exc
    return target


def pump(stream: io.BufferedIOBase, write: Callable[[bytes], object]) -> None:
    """The reading side: copy the step's output to ``write`` until EOF."""
    try:
        while chunk := stream.read1(CHUNK):
            write(chunk)
    except (OSError, ValueError):  # the sink or the pipe was closed under us
        log.debug("log pump stopped early", exc_info=True)


def start_reader(stream: io.BufferedIOBase, write: Callable[[bytes], object]) -> threading.Thread:
    reader = threading.Thread(target=pump, args=(stream, write), name="runtimed-log", daemon=True)
    reader.start()
    return reader


def _tee(sink: BinaryIO, copy: Callable[[bytes], object] | None) -> Callable[[bytes], object]:
    if copy is None:
        return sink.write

    def write(chunk: bytes) -> None:
        sink.write(chunk)
        try:
            copy(chunk)
        except Exception:  # noqa: BLE001 - shipping the log must never stop the step
            log.warning("log copy failed", exc_info=True)

    return write


def stopped_result(control: StepControl, start: datetime, end: datetime) -> Result:
    if control.terminating:
        return Result(
            FAILED,
            Reason.POD_TERMINATING,
            "the Runtime Pod shut down before the step finished; its processes were killed",
            None,
            start,
            end,
        )
    return cancelled_result(start, end)


def cancelled_result(start: datetime, end: datetime) -> Result:
    return Result(
        CANCELLED, "Cancelled", "the Run was cancelled; its processes were killed", None, start, end
    )


def run_step(step: Step, *, clock: Clock = utc_now, grace: float = KILL_GRACE_SECONDS) -> Result:
    procgroup.become_subreaper()
    start = clock()
    control = step.control or StepControl()
    if control.cancelled:
        return stopped_result(control, start, clock())
    program = step.command[0]
    executable = shutil.which(program) or f"/bin/{program}"
    step_id = uuid.uuid4().hex  # inherited by everything the step starts: see proctree
    with open(step.log_path, "wb", buffering=0) as sink:
        try:
            process = subprocess.Popen(
                list(step.command),  # argv[0] stays "bash" or "sh", as $0 of a -c script
                executable=executable,
                cwd=step.cwd,
                env={**step.env, proctree.STEP_ID_VARIABLE: step_id},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            return Result(
                FAILED, Reason.RUNTIME_ERROR, f"cannot start the step: {exc}", None, start, clock()
            )
        tree = proctree.StepTree(step_id, process.pid)
        tree.watch()
        procgroup.track(process.pid)
        if control.attach(process.pid):  # cancelled while it was starting
            procgroup.signal_group(process.pid, signal.SIGTERM)
        # the pod's provider kills what is named here if runtimed itself dies (kill -9)
        pgid_file = step.log_path.with_suffix(".pgid")
        pgid_file.write_text(str(process.pid))
        try:
            # stdout=PIPE with the default buffering is a BufferedReader; typeshed says IO[bytes]
            stdout = cast(io.BufferedReader, process.stdout)
            write, flush_masked = masking.masking_writer(_tee(sink, step.on_output), step.masked)
            reader = start_reader(stdout, write)
            timed_out = _wait(process, step.timeout)
            # On a timeout this kills the step; otherwise it kills what the step left running.
            procgroup.terminate_group(process.pid, grace, process)
            process.wait()
        except BaseException:
            procgroup.signal_group(process.pid, signal.SIGKILL)
            raise
        finally:
            # and what left the group (setsid, double forks): nothing outlives the step
            proctree.kill_step(tree)
            control.detach()
            procgroup.untrack(process.pid)
            pgid_file.unlink(missing_ok=True)
        reader.join(READER_JOIN_SECONDS)
        if reader.is_alive():
            log.warning("step %s: output still open after the group was killed", step.command)
        else:
            flush_masked()
    if control.cancelled and not timed_out:
        return stopped_result(control, start, clock())
    return outcome(process.returncode, timed_out, step.timeout, start, clock())


def _wait(process: subprocess.Popen[bytes], timeout: float | None) -> bool:
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return True
    return False


def outcome(
    returncode: int, timed_out: bool, timeout: float | None, start: datetime, end: datetime
) -> Result:
    if timed_out:
        return Result(
            TIMEOUT,
            Reason.TIMEOUT,
            f"the step did not finish within {timeout:g}s and was killed",
            None,
            start,
            end,
        )
    if returncode == 0:
        return Result(SUCCEEDED, "", "", 0, start, end)
    if returncode < 0:
        name = _signal_name(-returncode)
        code = 128 - returncode
        return Result(
            FAILED,
            Reason.RUNTIME_EXECUTE,
            f"the step exited with exit code {code} (killed by {name})",
            code,
            start,
            end,
        )
    return Result(
        FAILED,
        Reason.RUNTIME_EXECUTE,
        f"the step exited with exit code {returncode}",
        returncode,
        start,
        end,
    )


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
