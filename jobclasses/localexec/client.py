"""What the Job controller calls: start, observe, cancel, delete, read_log, running_count.

The controller keeps only the ``executionRef`` dict; everything else is in the execution dir,
so a restarted controller picks up a running execution by its ref instead of starting a new
one. ``start`` claims the dir by renaming a fully prepared temporary dir into place (atomic:
of two starters exactly one wins) while holding the lock it hands to the supervisor, so a
claimed execution is never seen without a holder until its supervisor exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import lock, procs, result
from .layout import ExecutionDir, read_text, write_atomic
from .result import Observation
from .spec import ExecutionSpec, to_json, validate

REF_TYPE = "local"
KILL_GRACE_SECONDS = 5.0
SPAWN_TIMEOUT_SECONDS = 30.0
DELETE_EXTRA_WAIT_SECONDS = 3.0
_SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the dir holding the jobclasses package


SUPERVISOR = "jobclasses.localexec.supervisor"


def start(
    root: Path,
    execution_id: str,
    spec: ExecutionSpec,
    *,
    kill_grace_seconds: float = KILL_GRACE_SECONDS,
) -> dict[str, Any]:
    """Start the execution, or return the ref of the one already started under this id."""
    validate(spec)
    return launch(
        root,
        execution_id,
        to_json(spec, kill_grace_seconds=kill_grace_seconds),
        runner=SUPERVISOR,
    )


def launch(root: Path, execution_id: str, spec_json: str, *, runner: str) -> dict[str, Any]:
    """Claim ``<root>/<execution_id>`` with ``spec_json`` and start ``python -m <runner>`` on it
    (detached, holding the lock), or return the ref of the execution already claimed there.

    The spec is any JSON object with ``steps`` (``[{"name", ...}]``) and ``killGraceSeconds``;
    the runner writes ``result.json`` and the log as the supervisor does, so observe, cancel,
    delete and read_log work on it unchanged.
    """
    if (
        not execution_id
        or "/" in execution_id
        or execution_id.startswith(".")
        or "\0" in execution_id
    ):
        raise ValueError(f"execution id {execution_id!r}: must be one path segment, not hidden")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    directory = ExecutionDir(root / execution_id)
    ref = {"type": REF_TYPE, "dir": str(directory.path), "id": execution_id}
    if not directory.path.exists():
        fd = _claim(root, directory, spec_json)
        if fd is not None:
            try:
                _spawn(directory, fd, runner)
            finally:
                os.close(fd)
            return ref
    _start_unstarted(directory, runner)
    return ref


def _claim(root: Path, directory: ExecutionDir, spec_json: str) -> int | None:
    """Prepare the dir aside, then rename it into place: the held lock, or None if beaten."""
    staging = ExecutionDir(
        Path(tempfile.mkdtemp(dir=root, prefix=f".claim-{directory.path.name}-"))
    )
    write_atomic(staging.spec, spec_json, mode=0o600)
    fd = lock.create_locked(staging.lock)
    try:
        os.rename(staging.path, directory.path)
    except OSError:  # another starter's dir is there (ENOTEMPTY/EEXIST)
        os.close(fd)
        shutil.rmtree(staging.path, ignore_errors=True)
        return None
    return fd


def _start_unstarted(directory: ExecutionDir, runner: str) -> None:
    """A claimed dir whose supervisor never recorded anything ran nothing: start it now."""
    fd = lock.try_exclusive(directory.lock)
    if fd is None:
        return
    try:
        if directory.spec.exists() and not directory.result.exists():
            _spawn(directory, fd, runner)
    finally:
        os.close(fd)


def _spawn(directory: ExecutionDir, lock_fd: int, runner: str) -> None:
    """Start the supervisor detached, handing it the held lock (the fd is inherited)."""
    pythonpath = os.pathsep.join(filter(None, [str(_SOURCE_ROOT), os.environ.get("PYTHONPATH")]))
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "PYTHONPATH": pythonpath}
    log_fd = os.open(directory.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        intermediate = subprocess.Popen(
            [
                sys.executable,
                "-m",
                runner,
                str(directory.path),
                "--lock-fd",
                str(lock_fd),
                "--detach",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(lock_fd,),
            start_new_session=True,
            cwd=directory.path,
            env=env,
        )
    finally:
        os.close(log_fd)
    # it forks the supervisor and exits at once, so nothing is left for us to reap
    with contextlib.suppress(subprocess.TimeoutExpired):
        intermediate.wait(timeout=SPAWN_TIMEOUT_SECONDS)


def _dir(ref: dict[str, Any]) -> ExecutionDir:
    if (
        not isinstance(ref, dict)
        or ref.get("type") != REF_TYPE
        or not isinstance(ref.get("dir"), str)
    ):
        raise ValueError(f"not a local executionRef: {ref!r}")
    return ExecutionDir(Path(ref["dir"]))


def observe(ref: dict[str, Any]) -> Observation:
    directory = _dir(ref)
    if not directory.path.is_dir():
        return Observation(result.UNKNOWN, "the execution directory is gone (deleted)")
    alive = lock.held(directory.lock)  # before reading: a dead supervisor wrote its last word
    recorded = result.parse(read_text(directory.result))
    if recorded is None:
        if alive:
            return Observation(result.PENDING, "the supervisor is starting")
        return Observation(
            result.UNKNOWN, "no supervisor is running and none has started; no step has run"
        )
    if recorded["phase"] in result.FINAL_PHASES or alive:
        return Observation.from_result(recorded)
    return Observation.from_result(
        recorded,
        phase=result.UNKNOWN,
        message="the supervisor exited without recording a final result",
    )


def cancel(ref: dict[str, Any], reason: str = "cancelled") -> None:
    """Ask the supervisor to stop (marker + SIGTERM); idempotent, safe on any execution."""
    directory = _dir(ref)
    if not directory.path.is_dir() or _finished(directory):
        return
    with contextlib.suppress(FileNotFoundError):
        if not directory.cancel.exists():
            write_atomic(directory.cancel, reason or "cancelled")
    fd = lock.try_exclusive(directory.lock)
    if fd is None:  # a supervisor (or its starter) holds it: the marker reaches it anyway
        _signal_supervisor(directory, signal.SIGTERM)
        return
    try:
        if directory.spec.exists() and not directory.result.exists():
            _record_cancelled_before_start(directory)
    finally:
        os.close(fd)
    _kill_step_groups(directory)  # the supervisor is dead: nobody else will


def _finished(directory: ExecutionDir) -> bool:
    recorded = result.parse(read_text(directory.result))
    return recorded is not None and recorded["phase"] in result.FINAL_PHASES


def _record_cancelled_before_start(directory: ExecutionDir) -> None:
    names = [
        step["name"] for step in json.loads(directory.spec.read_text(encoding="utf-8"))["steps"]
    ]
    now = result.now()
    steps = [dict(result.new_step(name), status=result.SKIPPED) for name in names]
    message = (read_text(directory.cancel) or "").strip() or "cancelled"
    cancelled = {
        "phase": result.CANCELLED,
        "message": message,
        "startTime": None,
        "completionTime": now,
        "steps": steps,
    }
    write_atomic(directory.result, json.dumps(cancelled))


def _signal_supervisor(directory: ExecutionDir, signum: int) -> None:
    recorded = _json(directory.supervisor)
    if isinstance(recorded, dict) and procs.same_process(recorded):
        procs.signal_group(recorded["pid"], signum)


def _kill_step_groups(directory: ExecutionDir) -> None:
    groups = _json(directory.groups)
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and procs.group_is_ours(group):
            procs.signal_group(group["pgid"], signal.SIGKILL)


def _json(path: Path) -> Any:
    text = read_text(path)
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def delete(ref: dict[str, Any]) -> None:
    """Cancel if still running, wait briefly for the supervisor to exit, remove the dir."""
    directory = _dir(ref)
    if not directory.path.is_dir():
        return
    if lock.held(directory.lock):
        cancel(ref, "deleted")
        if not _wait_released(directory, _grace(directory) + DELETE_EXTRA_WAIT_SECONDS):
            _signal_supervisor(directory, signal.SIGKILL)
            _wait_released(directory, DELETE_EXTRA_WAIT_SECONDS)
    _kill_step_groups(directory)
    shutil.rmtree(directory.path, ignore_errors=True)


def _grace(directory: ExecutionDir) -> float:
    text = read_text(directory.spec)
    try:
        return KILL_GRACE_SECONDS if text is None else float(json.loads(text)["killGraceSeconds"])
    except (ValueError, KeyError, TypeError):
        return KILL_GRACE_SECONDS


def _wait_released(directory: ExecutionDir, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while lock.held(directory.lock):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def read_log(ref: dict[str, Any], *, limit_bytes: int | None = None) -> str:
    """The execution's log (steps' output with a header per step); the tail when limited."""
    directory = _dir(ref)
    try:
        with open(directory.log, "rb") as handle:
            if limit_bytes is not None:
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - max(0, limit_bytes)))
            data = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return ""
    return data.decode("utf-8", errors="replace")


def running_count(root: Path) -> int:
    """Executions under ``root`` whose supervisor is alive (for maxConcurrentJobs).

    One that recorded its final result is not counted while its supervisor exits: by then
    nothing of it runs, and the controller has seen it finish.
    """
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return sum(
        1
        for entry in entries
        if not entry.name.startswith(".")
        and entry.is_dir(follow_symlinks=False)
        and _running(ExecutionDir(Path(entry.path)))
    )


def _running(directory: ExecutionDir) -> bool:
    return lock.held(directory.lock) and not _finished(directory)
