"""Process-group housekeeping: a step runs in its own session, and nothing of it may survive.

runtimed makes itself a child subreaper (Linux), so a step's orphans (``sleep 1000 &``) are
re-parented to runtimed instead of to PID 1 — which, in a container, often never reaps them —
and :func:`terminate_group` can reap them after killing the group.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

log = logging.getLogger("runtimed.procgroup")

_PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None
_live_lock = threading.Lock()
_live: set[int] = set()  # process groups of steps executing now


def become_subreaper() -> bool:
    """Ask Linux to re-parent orphaned descendants to this process. Idempotent."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):  # no libc/prctl: orphans go to PID 1
                _subreaper = False
    return _subreaper


def group_alive(pgid: int, leader: subprocess.Popen[Any] | None = None) -> bool:
    """Whether any process (zombies we could reap included) is left in the group.

    The leader (our direct child, a ``Popen``) is reaped through ``Popen.poll`` first, so the
    group-wide reaping never steals its exit status.
    """
    if leader is None or leader.poll() is not None:
        reap_group(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_group(pgid: int) -> None:
    """Collect exit statuses of our children in ``pgid`` (the step's re-parented orphans)."""
    while True:
        try:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def wait_group_gone(
    pgid: int, timeout: float, leader: subprocess.Popen[Any] | None = None, interval: float = 0.02
) -> bool:
    deadline = time.monotonic() + timeout
    while group_alive(pgid, leader):
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def terminate_group(
    pgid: int, grace: float, leader: subprocess.Popen[Any] | None = None, *, settle: float = 2.0
) -> None:
    """SIGTERM the whole group, SIGKILL whatever is left after ``grace``, reap what we can."""
    if not group_alive(pgid, leader):
        return
    signal_group(pgid, signal.SIGTERM)
    if wait_group_gone(pgid, grace, leader):
        return
    signal_group(pgid, signal.SIGKILL)
    if not wait_group_gone(pgid, settle, leader):
        log.warning(
            "process group %s still has members after SIGKILL (zombies owned by another parent?)",
            pgid,
        )


def track(pgid: int) -> None:
    with _live_lock:
        _live.add(pgid)


def untrack(pgid: int) -> None:
    with _live_lock:
        _live.discard(pgid)


def kill_live_groups() -> None:
    """SIGKILL every step still running, and whatever any step left outside its group: for
    runtimed's own exit, so no step outlives it."""
    from .proctree import kill_marked

    with _live_lock:
        groups = sorted(_live)
    for pgid in groups:
        log.warning("runtimed is exiting: killing step process group %s", pgid)
        signal_group(pgid, signal.SIGKILL)
    kill_marked()
