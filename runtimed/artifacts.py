"""Pack what the step left in its artifacts directory for upload.

Each top-level entry is one artifact: a regular file is uploaded as it is, a directory as a
reproducible ``.tar.gz`` (the same tree always gives the same bytes). Symlinks, FIFOs, sockets
and devices are refused at any depth, and nothing is ever opened through a symlink. Every
rejection is an :class:`ArtifactError`, which the Run reports as ``ArtifactInvalid``.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .refs import artifact_name_problem

GIB = 1 << 30
DEFAULT_MAX_ARTIFACT_BYTES = GIB
DEFAULT_MAX_RUN_BYTES = 10 * GIB
DEFAULT_MAX_COUNT = 32
CHUNK = 1 << 20
GZIP_LEVEL = 6  # fixed: the level changes the compressed bytes
FILE, DIRECTORY = "file", "directory"
GZIP_TYPE = "application/gzip"
DEFAULT_TYPE = "application/octet-stream"
_ENCODING_TYPES = {
    "gzip": GZIP_TYPE,
    "bzip2": "application/x-bzip2",
    "xz": "application/x-xz",
    "compress": "application/x-compress",
    "br": "application/x-brotli",
}
_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
# O_NONBLOCK: a FIFO swapped in after the check must not hang the open.
_FILE_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


class ArtifactError(Exception):
    """An artifact is refused; the message is meant for the Run's status."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Packed:
    name: str
    type: str  # "file" or "directory"
    path: Path  # what to upload: the file itself or a .tar.gz under scratch
    size: int  # bytes of what is uploaded
    digest: str  # "sha256:<hex>" of what is uploaded
    content_type: str


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...
    def flush(self) -> None: ...


class _Digesting:
    """A write-only sink that hashes and counts; it fails as soon as ``limit`` is passed."""

    def __init__(self, handle: _Sink, limit: int, what: str) -> None:
        self.handle, self.limit, self.what = handle, limit, what
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise ArtifactError(f"{self.what} is larger than the limit of {self.limit} bytes")
        self.sha256.update(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()

    @property
    def digest(self) -> str:
        return "sha256:" + self.sha256.hexdigest()


def collect(
    artifacts_dir: Path,
    scratch: Path,
    *,
    max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
    max_run_bytes: int = DEFAULT_MAX_RUN_BYTES,
    max_count: int = DEFAULT_MAX_COUNT,
) -> list[Packed]:
    """Every top-level entry of ``artifacts_dir`` packed for upload, sorted by name."""
    root_fd = open_artifacts_dir(artifacts_dir)
    if root_fd is None:
        return []
    packed: list[Packed] = []
    try:
        names = sorted(os.listdir(root_fd))
        if len(names) > max_count:
            raise ArtifactError(
                f"the step left {len(names)} artifacts; at most {max_count} are allowed"
            )
        for name in names:
            check_name(name)
        total = 0
        for name in names:
            packed.append(pack(root_fd, artifacts_dir, name, scratch, max_artifact_bytes))
            total += packed[-1].size
            if total > max_run_bytes:
                raise ArtifactError(
                    f"artifact {name!r} brings the Run's artifacts to {total} "
                    f"bytes; the limit is {max_run_bytes} bytes"
                )
    except BaseException:
        _discard_archives(packed)
        raise
    finally:
        os.close(root_fd)
    return packed


def open_artifacts_dir(artifacts_dir: Path) -> int | None:
    """A descriptor on the artifacts directory, or None if there is none."""
    try:
        return os.open(artifacts_dir, _DIR_OPEN)
    except FileNotFoundError:
        return None
    except OSError as exc:
        what = "a symlink" if artifacts_dir.is_symlink() else "not a readable directory"
        raise ArtifactError(f"the artifacts directory {artifacts_dir} is {what}") from exc


def check_name(name: str) -> None:
    """An artifact name is one path component (``runtimed.refs``); listdir smuggles
    undecodable bytes in as surrogates, which count as invalid UTF-8."""
    problem = artifact_name_problem(name)
    if problem is not None:
        raise ArtifactError(f"artifact name {name!r} {problem.message}")


def pack(root_fd: int, artifacts_dir: Path, name: str, scratch: Path, limit: int) -> Packed:
    """One top-level entry as a Packed: a regular file as is, a directory as a .tar.gz."""
    mode = _lstat(root_fd, name, name).st_mode
    if stat.S_ISREG(mode):
        size, digest = digest_file(root_fd, name, limit)
        return Packed(name, FILE, artifacts_dir / name, size, digest, file_content_type(name))
    if stat.S_ISDIR(mode):
        archive, size, digest = archive_directory(root_fd, name, scratch, limit)
        return Packed(name, DIRECTORY, archive, size, digest, GZIP_TYPE)
    raise ArtifactError(
        f"artifact {name!r} is {_kind(mode)}; only regular files and directories can be artifacts"
    )


def file_content_type(name: str) -> str:
    content_type, encoding = mimetypes.guess_type(name, strict=False)
    if encoding is not None:  # a .tar.gz is a gzip stream, whatever it holds
        return _ENCODING_TYPES.get(encoding, DEFAULT_TYPE)
    return content_type or DEFAULT_TYPE


def digest_file(root_fd: int, name: str, limit: int) -> tuple[int, str]:
    """(size, "sha256:<hex>") of a top-level file, streamed; ArtifactError past ``limit``."""
    sink = _Digesting(_NullSink(), limit, f"artifact {name!r}")
    fd = _open_file(root_fd, name, name)
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(CHUNK):
            sink.write(chunk)
    return sink.size, sink.digest


class _NullSink:
    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def archive_directory(root_fd: int, name: str, scratch: Path, limit: int) -> tuple[Path, int, str]:
    """Write the directory ``name`` as a reproducible .tar.gz under ``scratch``."""
    scratch.mkdir(parents=True, exist_ok=True)
    fd, archive = tempfile.mkstemp(prefix="artifact-", suffix=".tar.gz", dir=scratch)
    try:
        with os.fdopen(fd, "wb") as handle:
            sink = _Digesting(handle, limit, f"artifact {name!r} (packed)")
            write_archive(root_fd, name, sink)
    except BaseException:
        os.unlink(archive)
        raise
    return Path(archive), sink.size, sink.digest


def write_archive(root_fd: int, name: str, sink: _Digesting) -> None:
    """The tree under ``name`` as tar.gz: sorted, no owners, no times, normalised modes."""
    with (
        gzip.GzipFile(
            fileobj=sink, mode="wb", mtime=0, filename="", compresslevel=GZIP_LEVEL
        ) as compressed,
        tarfile.TarFile(
            fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8"
        ) as archive,
    ):
        for relative, parent_fd, leaf, info in walk_tree(root_fd, name):
            add_member(archive, name, relative, parent_fd, leaf, info)


def add_member(
    archive: tarfile.TarFile,
    artifact: str,
    relative: str,
    parent_fd: int,
    leaf: str,
    info: os.stat_result,
) -> None:
    member = tarfile.TarInfo(relative)
    member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
    if stat.S_ISDIR(info.st_mode):
        member.type, member.mode = tarfile.DIRTYPE, 0o755
        archive.addfile(member)
        return
    fd = _open_file(parent_fd, leaf, f"{artifact}/{relative}")
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        # A hard link is just another regular file here: tarinfo built by hand, never LNKTYPE.
        member.type, member.size = tarfile.REGTYPE, opened.st_size
        member.mode = 0o755 if opened.st_mode & 0o111 else 0o644
        try:
            archive.addfile(member, handle)
        except OSError as exc:  # the file shrank while it was read
            raise ArtifactError(
                f"artifact {artifact!r}: {relative!r} changed while it was packed: {exc}"
            ) from exc


def walk_tree(root_fd: int, name: str) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """Yield (path inside the artifact, parent fd, leaf name, lstat) depth-first, sorted.

    Iterative, so that a deep tree cannot exhaust Python's recursion limit.
    """
    top = _open_dir(root_fd, name, name)
    stack = [(top, "", iter(_sorted_children(top, name)))]
    try:
        while stack:
            dir_fd, prefix, children = stack[-1]
            leaf = next(children, None)
            if leaf is None:
                os.close(stack.pop()[0])
                continue
            relative = prefix + leaf
            where = f"{name}/{relative}"
            info = _checked_entry(dir_fd, leaf, name, relative)
            yield relative, dir_fd, leaf, info
            if stat.S_ISDIR(info.st_mode):
                child = _open_dir(dir_fd, leaf, where)
                stack.append((child, relative + "/", iter(_sorted_children(child, where))))
    finally:
        for dir_fd, _, _ in stack:
            os.close(dir_fd)


def _checked_entry(dir_fd: int, leaf: str, artifact: str, relative: str) -> os.stat_result:
    try:
        leaf.encode("utf-8")
    except UnicodeEncodeError:
        raise ArtifactError(
            f"artifact {artifact!r}: the name {relative!r} is not valid UTF-8"
        ) from None
    info = _lstat(dir_fd, leaf, f"{artifact}/{relative}")
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        raise ArtifactError(
            f"artifact {artifact!r}: {relative!r} is {_kind(info.st_mode)}; "
            "an artifact directory may hold only regular files and directories"
        )
    return info


def _sorted_children(dir_fd: int, where: str) -> list[str]:
    try:
        return sorted(os.listdir(dir_fd))
    except OSError as exc:
        raise ArtifactError(f"cannot list {where!r}: {exc}") from exc


def _lstat(dir_fd: int, leaf: str, where: str) -> os.stat_result:
    try:
        return os.stat(leaf, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        raise ArtifactError(f"cannot inspect {where!r}: {exc}") from exc


def _open_dir(dir_fd: int, leaf: str, where: str) -> int:
    try:
        return os.open(leaf, _DIR_OPEN, dir_fd=dir_fd)
    except OSError as exc:
        raise ArtifactError(
            f"cannot open the directory {where!r} (it may have been replaced by a symlink): {exc}"
        ) from exc


def _open_file(dir_fd: int, leaf: str, where: str) -> int:
    """A read descriptor on a regular file, never through a symlink."""
    try:
        fd = os.open(leaf, _FILE_OPEN, dir_fd=dir_fd)
    except OSError as exc:
        raise ArtifactError(
            f"cannot open {where!r} (it may have been replaced by a symlink): {exc}"
        ) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ArtifactError(f"{where!r} is {_kind(mode)}; only regular files can be packed")
    os.set_blocking(fd, True)
    return fd


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((label for test, label in kinds if test(mode)), "of an unknown type")


def _discard_archives(packed: list[Packed]) -> None:
    """Remove the archives already written when collection fails half-way."""
    for item in packed:
        if item.type == DIRECTORY:
            item.path.unlink(missing_ok=True)
