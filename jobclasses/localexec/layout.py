"""The files of one execution directory, and the one way they are rewritten (atomically).

Everything an execution knows lives here, so a restarted controller needs only the path.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ExecutionDir:
    path: Path

    @property
    def spec(self) -> Path:
        return self.path / "spec.json"

    @property
    def lock(self) -> Path:  # held (flock, exclusive) by the live supervisor
        return self.path / "lock"

    @property
    def log(self) -> Path:
        return self.path / "log"

    @property
    def result(self) -> Path:
        return self.path / "result.json"

    @property
    def cancel(self) -> Path:  # its text is the cancel reason
        return self.path / "cancel"

    @property
    def supervisor(self) -> Path:  # the supervisor's identity: {"pid", "start"}
        return self.path / "supervisor.json"

    @property
    def groups(self) -> Path:  # the step process groups started: [{"pgid", "start"}]
        return self.path / "groups.json"

    @property
    def work(self) -> Path:
        return self.path / "work"


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write a whole file so that a reader sees the old or the new content, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
