"""Processes by identity, not by pid: a pid is recorded with its start time, since pids get reused.

Also the Linux extras the supervisor uses: a child subreaper (a step's orphans are re-parented
to it and reaped), and a parent-death signal (a step leader dies with a SIGKILLed supervisor).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks (Linux ``/proc``); None if absent or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may contain ") "
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def identity(pid: int) -> dict[str, Any]:
    return {"pid": pid, "start": start_ticks(pid)}


def is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def same_process(recorded: dict[str, Any]) -> bool:
    """Whether the recorded process still runs (a reused pid has another start time)."""
    pid = recorded.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    ticks = start_ticks(pid)
    if ticks is None:
        return False
    return recorded.get("start") is None or ticks == recorded["start"]


def group_is_ours(recorded: dict[str, Any]) -> bool:
    """Whether signalling the recorded group can only reach our processes.

    The kernel never hands out a pid that is still some group's id, so while our group has
    members its leader's pid is either our leader or free; a different process there means
    our group is gone.
    """
    pgid = recorded.get("pgid")
    if not isinstance(pgid, int) or pgid <= 1:
        return False
    ticks = start_ticks(pgid)
    return ticks is None or recorded.get("start") is None or ticks == recorded["start"]


def signal_group(pgid: int, signum: int) -> bool:
    """Signal a process group; False when it has no member left."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap(pgid: int) -> None:
    """Collect the exit statuses of our children in ``pgid`` (re-parented orphans included)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-pgid, os.WNOHANG)[0] != 0:
            pass


def group_alive(pgid: int) -> bool:
    reap(pgid)
    return signal_group(pgid, 0)


def wait_group_gone(pgid: int, timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def terminate_group(pgid: int, grace: float) -> None:
    """SIGTERM the whole group, SIGKILL whatever is left after ``grace``."""
    if not group_alive(pgid):
        return
    signal_group(pgid, signal.SIGTERM)
    if not wait_group_gone(pgid, grace):
        signal_group(pgid, signal.SIGKILL)
        wait_group_gone(pgid, 2.0)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent_pid: int) -> None:
    """In a freshly forked child: get SIGKILL when the parent dies (Linux), even if it already has."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)
