"""PersistentWorkspaces on the pod's disk: ``<workspace>/persistent/<name>``.

A Run whose payload names a workspace runs with that directory as its current directory; its
runtimed-managed files (source, outputs, artifacts, attempt records) stay Run-local under
``<persistent>/.kruntimes/runs/<run-uid>/``. runtimed creates the directory on first use and
deletes it only when the control plane asks (``runtimed.delete_workspace``, see ``cleanup``),
and only while no local Run uses it (:class:`WorkspaceUse`). Every path is confined: a name
is one DNS-1123 subdomain, and a symlink never leads a create or a delete out of
``<workspace>/persistent``.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections import Counter
from pathlib import Path

from .protocol import PERSISTENT_DIR

MAX_NAME_LENGTH = 253
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")


class WorkspaceError(Exception):
    """A workspace name or directory runtimed must not use; the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_name(name: object) -> str:
    """``name`` if it is a DNS-1123 subdomain (so one path component, never ``.``/``..``)."""
    if not isinstance(name, str) or not name:
        raise WorkspaceError(f"workspace name {name!r} must be a non-empty string")
    if len(name) > MAX_NAME_LENGTH or not _SUBDOMAIN.fullmatch(name):
        raise WorkspaceError(
            f"workspace name {name!r} is not a DNS-1123 subdomain (lower case alphanumerics, "
            f"'-' and '.', at most {MAX_NAME_LENGTH} characters)"
        )
    return name


def root(workspace: Path) -> Path:
    """Where the pod keeps its persistent workspaces."""
    return workspace / PERSISTENT_DIR


def path(workspace: Path, name: str) -> Path:
    """The directory of workspace ``name`` (not created, not checked on disk)."""
    return root(workspace) / check_name(name)


def ensure(workspace: Path, name: str) -> Path:
    """Create workspace ``name`` if missing; it must be a real directory in ``persistent``."""
    target = path(workspace, name)
    try:
        _check_root(workspace, create=True)
        if target.is_symlink():
            raise WorkspaceError(f"workspace directory {target} is a symlink")
        target.mkdir(exist_ok=True)
    except OSError as exc:
        raise WorkspaceError(f"cannot create the workspace directory {target}: {exc}") from exc
    if not target.is_dir() or target.resolve().parent != root(workspace).resolve():
        raise WorkspaceError(f"workspace directory {target} is not a directory of its own")
    return target


def delete(workspace: Path, name: str) -> None:
    """Delete workspace ``name``'s directory and everything in it; missing is deleted.

    Refuses (WorkspaceError) when the directory or ``persistent`` itself is a symlink or not a
    directory. The tree is removed through a descriptor of ``persistent`` opened without
    following symlinks, and ``shutil.rmtree`` never follows the symlinks inside it.
    """
    target = path(workspace, name)
    if not _check_root(workspace, create=False):
        return
    if not os.path.lexists(target):
        return
    if target.is_symlink() or not target.is_dir():
        raise WorkspaceError(f"refusing to delete {target}: not a directory (a symlink?)")
    fd = os.open(root(workspace), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        shutil.rmtree(name, dir_fd=fd)
    finally:
        os.close(fd)


def _check_root(workspace: Path, *, create: bool) -> bool:
    """Whether ``persistent`` exists (created if ``create``); it must not be a symlink."""
    base = root(workspace)
    if base.is_symlink():
        raise WorkspaceError(f"{base} is a symlink")
    if create:
        base.mkdir(exist_ok=True)
    elif not base.exists():
        return False
    if not base.is_dir():
        raise WorkspaceError(f"{base} is not a directory")
    return True


class WorkspaceUse:
    """Which workspaces the Runs of this process use, so a delete never races one: a Run
    waits while its workspace is being deleted, and a delete is refused while a Run uses it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._users: Counter[str] = Counter()
        self._deleting: set[str] = set()

    def enter(self, name: str) -> None:
        with self._changed:
            self._changed.wait_for(lambda: name not in self._deleting)
            self._users[name] += 1

    def leave(self, name: str) -> None:
        with self._changed:
            self._users[name] -= 1
            if self._users[name] <= 0:
                del self._users[name]

    def in_use(self, name: str) -> bool:
        with self._changed:
            return self._users[name] > 0

    def begin_delete(self, name: str) -> bool:
        """Reserve ``name`` for deleting; False (nothing reserved) while a Run uses it."""
        with self._changed:
            if self._users[name] > 0 or name in self._deleting:
                return False
            self._deleting.add(name)
            return True

    def end_delete(self, name: str) -> None:
        with self._changed:
            self._deleting.discard(name)
            self._changed.notify_all()
