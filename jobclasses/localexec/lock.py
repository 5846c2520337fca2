"""Liveness by ``flock``: the live supervisor holds ``<dir>/lock`` exclusively for its whole life.

The kernel drops the lock when the last descriptor of it closes, so a killed supervisor is
seen as dead at once and a reused pid can never look alive. Probes take a *shared* lock, so
two observers never mistake each other for a supervisor.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


def _try(path: Path, operation: int) -> int | None:
    """An open descriptor holding the lock, or None when another process holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def held(path: Path) -> bool:
    """Whether a supervisor (or a starter handing the lock to one) holds the lock now."""
    if not path.exists():
        return False
    fd = _try(path, fcntl.LOCK_SH)
    if fd is None:
        return path.exists()
    os.close(fd)
    return False


def try_exclusive(path: Path) -> int | None:
    """Take the lock exclusively without waiting: the descriptor, or None if it is held."""
    return _try(path, fcntl.LOCK_EX)


def create_locked(path: Path) -> int:
    """Create the lock file and hold it exclusively (it is new, so nobody else can)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd
