"""The filesystem ArtifactStore: a shared PersistentVolumeClaim mounted on every Runtime Pod.

Objects live at ``<root>/namespaces/<ns>/runs/<uid>/<name>``. Every directory below the root is
walked with ``O_NOFOLLOW`` file descriptors, so a symlink planted in the layout (by a step that
shares the volume) can neither redirect a write nor expose a file outside the root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from ..refs import ArtifactLocation
from .base import RefOutOfScope, RunScope, StoreError, check_name, parse_relative

CHUNK_BYTES = 1024 * 1024
TEMP_PREFIX = ".kruntimes-upload-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# ELOOP: the component is a symlink; ENOTDIR: it is something other than a directory.
_NOT_OUR_DIRECTORY = (errno.ELOOP, errno.ENOTDIR)


class FilesystemStore:
    """Artifacts as files below ``root`` (the mount of volume claim ``volume_claim_name``)."""

    driver = "filesystem"

    def __init__(self, root: Path, volume_claim_name: str) -> None:
        self.root = Path(root)
        self.volume_claim_name = volume_claim_name

    def put(
        self, scope: RunScope, name: str, source: BinaryIO, size: int, content_type: str
    ) -> ArtifactLocation:
        check_name(name)
        relative = scope.relative(name)
        with self._run_dir(scope, create=True) as run_fd:
            _refuse_symlink(run_fd, name, relative)
            temp = TEMP_PREFIX + secrets.token_hex(8)
            try:
                _write_exactly(run_fd, temp, source, size, relative)
                _replace(run_fd, temp, name, relative)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=run_fd)
                raise
            _sync_dir(run_fd, relative)
        return {"filesystem": {"path": relative, "volumeClaimName": self.volume_claim_name}}

    def open(self, ref: Mapping[str, Any]) -> BinaryIO:
        scope, name = self._scope_of(ref)
        relative = scope.relative(name)
        try:
            with self._run_dir(scope, create=False) as run_fd:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=run_fd)
        except (_Absent, FileNotFoundError):
            raise StoreError(
                f"artifact {relative} does not exist on volume claim {self.volume_claim_name!r}"
            ) from None
        except OSError as exc:
            raise StoreError(_os_message(exc, f"cannot open artifact {relative}")) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(f"artifact {relative} is not a regular file")
        return os.fdopen(fd, "rb")

    def delete(self, scope: RunScope, name: str) -> None:
        check_name(name)
        relative = scope.relative(name)
        try:
            with self._run_dir(scope, create=False) as run_fd:
                _remove_entry(run_fd, name)
        except _Absent:
            return
        except OSError as exc:
            raise StoreError(_os_message(exc, f"cannot delete artifact {relative}")) from None

    def delete_run(self, scope: RunScope) -> int:
        runs = scope.relative().rsplit("/", 1)[0]
        try:
            with self._open_dir(runs.split("/"), create=False) as runs_fd:
                return _remove_run(runs_fd, scope.run_uid)
        except _Absent:
            return 0
        except OSError as exc:
            raise StoreError(_os_message(exc, f"cannot delete {scope.relative()}")) from None

    def _scope_of(self, ref: Mapping[str, Any]) -> tuple[RunScope, str]:
        if not isinstance(ref, dict) or ref.get("driver") != self.driver:
            raise RefOutOfScope("the artifact ref does not name a filesystem artifact")
        location = (ref.get("location") or {}).get("filesystem")
        if not isinstance(location, dict):
            raise RefOutOfScope("the artifact ref has no location.filesystem")
        claim = location.get("volumeClaimName")
        if claim is not None and claim != self.volume_claim_name:
            raise RefOutOfScope(
                f"the artifact lives on volume claim {claim!r}, not on {self.volume_claim_name!r}"
            )
        return parse_relative(location.get("path"))

    def _run_dir(self, scope: RunScope, *, create: bool) -> contextlib.AbstractContextManager[int]:
        return self._open_dir(scope.relative().split("/"), create=create)

    @contextlib.contextmanager
    def _open_dir(self, components: list[str], *, create: bool) -> Iterator[int]:
        """An fd of ``<root>/<components...>``, walked without following any symlink."""
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise StoreError(
                _os_message(exc, f"the artifact volume {self.root} is not usable")
            ) from None
        try:
            for depth, component in enumerate(components):
                child = _step(fd, component, "/".join(components[: depth + 1]), create)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)


class _Absent(Exception):
    """A directory of the layout is missing or is not a real directory: nothing of ours is there."""


def _step(parent_fd: int, component: str, shown: str, create: bool) -> int:
    """Open directory ``component`` below ``parent_fd`` (creating it if asked)."""
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(component, dir_fd=parent_fd)
        return os.open(component, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if create:
            raise StoreError(f"cannot create {shown} on the artifact volume") from None
        raise _Absent(shown) from None
    except OSError as exc:
        if exc.errno in _NOT_OUR_DIRECTORY:
            if create:
                raise StoreError(
                    f"{shown} on the artifact volume is a symbolic link or not a "
                    "directory; refusing to write through it"
                ) from None
            raise _Absent(shown) from None
        raise StoreError(_os_message(exc, f"cannot open {shown} on the artifact volume")) from None


def _refuse_symlink(dir_fd: int, name: str, shown: str) -> None:
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise StoreError(
            f"{shown} on the artifact volume is a symbolic link; refusing to replace it"
        )


def _write_exactly(dir_fd: int, temp: str, source: BinaryIO, size: int, shown: str) -> None:
    """Copy exactly ``size`` bytes of ``source`` into a new file ``temp`` and fsync it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        raise StoreError(_os_message(exc, f"cannot create a file for {shown}")) from None
    try:
        remaining = size
        while remaining > 0:
            chunk = source.read(min(CHUNK_BYTES, remaining))
            if not chunk:
                raise StoreError(f"the source of {shown} ended {remaining} bytes short of {size}")
            chunk = chunk[:remaining]
            _write_all(fd, chunk)
            remaining -= len(chunk)
        os.fsync(fd)
    except OSError as exc:
        raise StoreError(_os_message(exc, f"cannot write {shown}")) from None
    finally:
        os.close(fd)


def _replace(dir_fd: int, temp: str, name: str, shown: str) -> None:
    # rename() swaps the directory entry itself: it never writes through a symlink at ``name``.
    try:
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        raise StoreError(_os_message(exc, f"cannot put {shown} in place")) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _remove_entry(dir_fd: int, name: str) -> int:
    """Remove ``name`` below ``dir_fd`` without following it; how many objects went."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return 0
    if stat.S_ISDIR(mode):
        # rmtree's fd-based walk never follows a symlink it meets inside the tree.
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)
    return 1


def _remove_run(runs_fd: int, uid: str) -> int:
    try:
        run_fd = os.open(uid, _DIR_FLAGS, dir_fd=runs_fd)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        if exc.errno not in _NOT_OUR_DIRECTORY:
            raise
        # A symlink or file squatting on the run directory: remove it, never its target.
        os.unlink(uid, dir_fd=runs_fd)
        return 0
    try:
        count = len(os.listdir(run_fd))
    finally:
        os.close(run_fd)
    shutil.rmtree(uid, dir_fd=runs_fd)
    return count


def _sync_dir(dir_fd: int, shown: str) -> None:
    # The rename is durable only once its directory is synced.
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        raise StoreError(_os_message(exc, f"cannot sync the directory of {shown}")) from None


def _os_message(exc: OSError, message: str) -> str:
    return f"{message}: {exc.strerror or exc}"
