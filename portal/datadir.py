"""The embedded default's data directory, made by the entry points rather than by settings.

Importing ``portal.settings`` creates no file: a linter, a type checker or ``import`` in a shell
leaves the disk alone. ``manage.py``, the WSGI app, the Celery app and the test session call
``ensure_data_dir()`` once before they touch the database or the broker; it makes
``KRUNTIMES_DATA_DIR`` with the folders the settings name (static files, the filesystem broker).

The per-installation secret key of the embedded default is read (and made, 0600) the first time
Django signs something, by ``secret_key()``: production sets ``SECRET_KEY`` and never gets here.

``manage.py up`` holds ``lock_for_up()`` for its whole life: one ``up`` per data directory, as
two would each take the other's Runtime Pods (same names, same disks) for their own.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings
from django.utils.functional import lazy


def ensure_data_dir() -> None:
    """Create ``DATA_DIR`` and the folders under it the settings list (idempotent)."""
    for folder in settings.KRUNTIMES_DATA_FOLDERS:
        Path(folder).mkdir(parents=True, exist_ok=True)


@cache
def _read_or_make_key(path: str) -> str:
    key_file = Path(path)
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.parent.mkdir(parents=True, exist_ok=True)
        # written aside with 0600, then linked into place: two processes starting at once
        # agree on the first key linked, and neither reads a half-written file
        # (a name of its own per caller: threads of one process race here too)
        fd, aside_name = tempfile.mkstemp(prefix=f".{key_file.name}.", dir=key_file.parent)
        aside = Path(aside_name)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(get_random_secret_key())
        try:
            os.link(aside, key_file)
        except FileExistsError:
            pass
        finally:
            aside.unlink()
    return key_file.read_text().strip()


def secret_key(path: Path):
    """A lazy str: the key in ``path``, made with mode 0600 on first use."""
    return lazy(_read_or_make_key, str)(str(path))


UP_LOCK = "up.lock"


class DataDirBusy(Exception):
    """Another ``manage.py up`` holds the data directory."""


@dataclass
class UpLock:
    """An exclusive ``flock`` on ``<data dir>/up.lock``, naming its holder's pid; the kernel
    drops it when the holder exits, however it exits (``kill -9`` included)."""

    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def lock_for_up(data_dir: Path) -> UpLock:
    """Take the data directory for this ``up``, or raise ``DataDirBusy`` at once naming the
    ``up`` that has it."""
    path = Path(data_dir) / UP_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise DataDirBusy(
            f"another `manage.py up` (pid {holder}) is running on the data directory "
            f"{Path(data_dir)}; stop it first (its lock: {path})"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return UpLock(path, fd)
