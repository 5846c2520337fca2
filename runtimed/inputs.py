"""Stage a Run's artifact inputs under the step's working directory, before the step runs.

A ``file``/``blob`` artifact is copied to ``path``; a ``directory``/``archive`` artifact is a tar
(gzip or not) extracted into the directory ``path``. The stream is spooled and verified against
the ref's ``sizeBytes`` and ``digest`` first. Nothing is ever written through a symlink: every
directory is opened component by component with ``O_NOFOLLOW``, archives are checked member by
member before anything is created, and a tree is extracted into a fresh directory that is only
renamed into place once complete. Every failure is a :class:`StagingError` (``PrepareSource``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from hashlib import _Hash  # what hashlib.sha256() returns; typeshed-only name

FILE_TYPES = frozenset({"file", "blob"})
TREE_TYPES = frozenset({"directory", "archive"})
CHUNK = 1 << 20
MAX_SYMLINK_HOPS = 40  # what Linux allows when it resolves a path
STAGING_PREFIX = ".kruntimes-staging-"
_DIGEST = re.compile(r"sha256:([0-9a-fA-F]{64})")
_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
DIR, FILE, SYMLINK = "directory", "file", "symlink"

Parts = tuple[str, ...]


class StagingError(Exception):
    """An input cannot be staged; the message is meant for the Run's status."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class _Entry:
    """One archive member that passed the checks, with where it goes."""

    member: tarfile.TarInfo
    parts: Parts
    link: Parts | None = None  # a hard link's target, as parts from the archive root


def stage_input(
    stream: BinaryIO, ref: Mapping[str, Any], destination_root: Path, path: str, *, spool_dir: Path
) -> Path:
    """Verify the artifact read from ``stream`` and put it at ``destination_root / path``."""
    parts = split_input_path(path)
    name = str(ref.get("name") or "?")
    kind = ref.get("type")
    if kind not in FILE_TYPES | TREE_TYPES:
        raise StagingError(f"artifact input {name!r} has unsupported type {kind!r}")
    spool = spool_stream(stream, spool_dir, name, expected_size(ref), expected_digest(ref))
    try:
        if kind in FILE_TYPES:
            place_file(spool, destination_root, parts, name)
        else:
            place_tree(spool, destination_root, parts, name)
    finally:
        spool.unlink(missing_ok=True)
    return destination_root.joinpath(*parts)


def split_input_path(path: str) -> Parts:
    """The segments of a relative ``path``; no empty, ``.`` or ``..`` segment, no NUL."""
    if not isinstance(path, str) or not path:
        raise StagingError("an artifact input path must be a non-empty relative path")
    if "\0" in path:
        raise StagingError(f"artifact input path {path!r} contains a NUL byte")
    if path.startswith("/"):
        raise StagingError(f"artifact input path {path!r} must be relative")
    parts = tuple(path.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        raise StagingError(
            f"artifact input path {path!r} must not contain empty, '.' or '..' segments"
        )
    return parts


def expected_size(ref: Mapping[str, Any]) -> int | None:
    size: object = ref.get("sizeBytes")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise StagingError(f"artifact input {ref.get('name')!r} has an invalid sizeBytes {size!r}")
    return size


def expected_digest(ref: Mapping[str, Any]) -> str | None:
    """The expected sha256 as lowercase hex, or None when the ref names no digest."""
    digest = ref.get("digest")
    if digest is None:
        return None
    match = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    if match is None:
        raise StagingError(
            f"artifact input {ref.get('name')!r} has an invalid digest; "
            "expected sha256:<64 hex digits>"
        )
    return match.group(1).lower()


def spool_stream(
    stream: BinaryIO, spool_dir: Path, name: str, size: int | None, digest: str | None
) -> Path:
    """Copy ``stream`` to a temp file under ``spool_dir`` while hashing, then verify it."""
    spool_dir.mkdir(parents=True, exist_ok=True)
    fd, spool_name = tempfile.mkstemp(prefix="input-", suffix=".spool", dir=spool_dir)
    spool = Path(spool_name)
    try:
        sha256, count = _copy_hashing(stream, fd, name, size)
        if size is not None and count != size:
            raise StagingError(f"artifact input {name!r} is {count} bytes; its ref says {size}")
        if digest is not None and sha256.hexdigest() != digest:
            # neither digest: the real one would let a wrong ref learn what it could not read
            raise StagingError(f"artifact input {name!r} does not match the digest of its ref")
    except BaseException:
        spool.unlink(missing_ok=True)
        raise
    return spool


def _copy_hashing(stream: BinaryIO, fd: int, name: str, size: int | None) -> tuple[_Hash, int]:
    sha256, count = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as spool:
            while chunk := stream.read(CHUNK):
                count += len(chunk)
                if size is not None and count > size:  # stop early: it cannot match any more
                    raise StagingError(
                        f"artifact input {name!r} is larger than the {size} bytes its ref says"
                    )
                sha256.update(chunk)
                spool.write(chunk)
    except OSError as exc:
        raise StagingError(f"cannot spool artifact input {name!r}: {exc}") from exc
    return sha256, count


def place_file(spool: Path, root: Path, parts: Parts, name: str) -> None:
    """Copy the spool to the destination, replacing a regular file already there."""
    with _Parents(root, parts, name) as parents:
        leaf = parts[-1]
        existing = _lstat_or_none(parents.fd, leaf)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise StagingError(
                f"artifact input {name!r}: {'/'.join(parts)!r} already exists "
                f"and is {_kind(existing.st_mode)}, not a regular file"
            )
        temporary = STAGING_PREFIX + secrets.token_hex(8)
        try:
            with open(spool, "rb") as source:
                _write_new_file(parents.fd, temporary, source, 0o644)
            os.replace(temporary, leaf, src_dir_fd=parents.fd, dst_dir_fd=parents.fd)
        except OSError as exc:
            _unlink_quietly(parents.fd, temporary)
            raise StagingError(
                f"cannot write artifact input {name!r} to {'/'.join(parts)!r}: {exc}"
            ) from exc


def place_tree(spool: Path, root: Path, parts: Parts, name: str) -> None:
    """Check the archive, extract it next to the destination, then rename it into place."""
    try:
        with tarfile.open(spool, mode="r:*") as archive:
            plan = plan_members(archive, name)
            with _Parents(root, parts, name) as parents:
                _check_tree_destination(parents.fd, parts, name)
                _extract_then_rename(archive, plan, parents, root, parts, name)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise StagingError(f"artifact input {name!r} is not a readable tar archive: {exc}") from exc


def _check_tree_destination(parent_fd: int, parts: Parts, name: str) -> None:
    existing = _lstat_or_none(parent_fd, parts[-1])
    if existing is not None and not stat.S_ISDIR(existing.st_mode):
        raise StagingError(
            f"artifact input {name!r}: {'/'.join(parts)!r} already exists and "
            f"is {_kind(existing.st_mode)}, not a directory"
        )


def _extract_then_rename(
    archive: tarfile.TarFile,
    plan: list[_Entry],
    parents: _Parents,
    root: Path,
    parts: Parts,
    name: str,
) -> None:
    temporary = STAGING_PREFIX + secrets.token_hex(8)
    try:
        os.mkdir(temporary, 0o700, dir_fd=parents.fd)
        temporary_path = root.joinpath(*parts[:-1], temporary)
        tree_fd = os.open(temporary, _DIR_OPEN, dir_fd=parents.fd)
        try:
            os.fchmod(tree_fd, 0o755)
            for entry in plan:
                extract_member(archive, entry, tree_fd, temporary_path, name)
        finally:
            os.close(tree_fd)
        _swap_into_place(parents.fd, temporary, parts[-1])
    except BaseException as exc:
        shutil.rmtree(temporary, dir_fd=parents.fd, ignore_errors=True)
        if isinstance(exc, OSError):
            raise StagingError(
                f"cannot extract artifact input {name!r} into {'/'.join(parts)!r}: {exc}"
            ) from exc
        raise


def _swap_into_place(parent_fd: int, temporary: str, leaf: str) -> None:
    """Rename the extracted tree onto ``leaf``, replacing a directory an earlier attempt left."""
    old = None
    if _lstat_or_none(parent_fd, leaf) is not None:
        old = STAGING_PREFIX + secrets.token_hex(8)
        os.rename(leaf, old, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    os.rename(temporary, leaf, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    if old is not None:
        shutil.rmtree(old, dir_fd=parent_fd, ignore_errors=True)


def plan_members(archive: Iterable[tarfile.TarInfo], name: str) -> list[_Entry]:
    """Check every member before anything is written; the entries to extract, in order."""
    kinds: dict[Parts, str] = {}
    symlinks: dict[Parts, str] = {}
    plan: list[_Entry] = []
    for member in archive:
        parts = member_parts(member.name, f"member {member.name!r}", name)
        if not parts:
            if member.isdir():
                continue  # the archive's own root, "./"
            raise StagingError(f"artifact input {name!r}: member {member.name!r} has no name")
        kind = member_kind(member, name)
        _claim_parents(kinds, parts, member.name, name)
        _claim(kinds, parts, kind, member.name, name)
        link = _hard_link_target(kinds, member, name) if member.islnk() else None
        if member.issym():
            symlinks[parts] = member.linkname
        plan.append(_Entry(member, parts, link))
    for parts, target in symlinks.items():
        check_symlink_target(kinds, symlinks, parts, target, name)
    return plan


def member_parts(member_name: str, what: str, name: str) -> Parts:
    """A member's path as parts; absolute, ``..`` and NUL are refused, ``.`` dropped."""
    if "\0" in member_name:
        raise StagingError(f"artifact input {name!r}: {what} contains a NUL byte")
    if member_name.startswith("/"):
        raise StagingError(f"artifact input {name!r}: {what} is an absolute path")
    segments = member_name.split("/")
    if ".." in segments:
        raise StagingError(f"artifact input {name!r}: {what} contains '..'")
    return tuple(segment for segment in segments if segment not in ("", "."))


def member_kind(member: tarfile.TarInfo, name: str) -> str:
    if member.isdir():
        return DIR
    if member.isreg() or member.islnk():
        return FILE
    if member.issym():
        return SYMLINK
    what = {
        tarfile.CHRTYPE: "a character device",
        tarfile.BLKTYPE: "a block device",
        tarfile.FIFOTYPE: "a FIFO",
    }.get(member.type, f"of unsupported type {member.type!r}")
    raise StagingError(
        f"artifact input {name!r}: member {member.name!r} is {what}; only "
        "regular files, directories, symlinks and hard links can be staged"
    )


def _claim_parents(kinds: dict[Parts, str], parts: Parts, shown: str, name: str) -> None:
    """Every directory above a member must be a directory: never a symlink, never a file."""
    for depth in range(1, len(parts)):
        above = parts[:depth]
        kind = kinds.setdefault(above, DIR)
        if kind != DIR:
            raise StagingError(
                f"artifact input {name!r}: member {shown!r} passes through "
                f"{'/'.join(above)!r}, which is a {kind}"
            )


def _claim(kinds: dict[Parts, str], parts: Parts, kind: str, shown: str, name: str) -> None:
    earlier = kinds.get(parts)
    if earlier is not None and (earlier, kind) != (DIR, DIR):
        raise StagingError(
            f"artifact input {name!r}: member {shown!r} appears more than once "
            f"(as a {earlier}, then as a {kind})"
        )
    kinds[parts] = kind


def _hard_link_target(kinds: dict[Parts, str], member: tarfile.TarInfo, name: str) -> Parts:
    """A hard link must name an earlier regular member, inside the archive."""
    what = f"hard link {member.name + ' -> ' + member.linkname!r}"
    target = member_parts(member.linkname, what, name)
    if not target or kinds.get(target) != FILE or target == member_parts(member.name, what, name):
        raise StagingError(
            f"artifact input {name!r}: {what} does not point at an earlier "
            "regular file of the archive"
        )
    return target


def check_symlink_target(
    kinds: dict[Parts, str], symlinks: dict[Parts, str], parts: Parts, target: str, name: str
) -> None:
    """Resolve the target the way the kernel would, over the archive's tree: stay inside."""
    shown = f"{'/'.join(parts)} -> {target}"
    if not target or "\0" in target or target.startswith("/"):
        raise StagingError(
            f"artifact input {name!r}: symlink {shown!r} must have a relative "
            "target inside the destination"
        )
    current: list[str] = list(parts[:-1])
    pending = target.split("/")
    hops = 0
    while pending:
        segment = pending.pop(0)
        if segment in ("", "."):
            continue
        if segment == "..":
            if not current:
                raise StagingError(
                    f"artifact input {name!r}: symlink {shown!r} points outside the destination"
                )
            current.pop()
            continue
        candidate = (*current, segment)
        if kinds.get(candidate) != SYMLINK:
            current.append(segment)
            continue
        hops += 1
        inner = symlinks[candidate]
        if inner.startswith("/"):
            raise StagingError(
                f"artifact input {name!r}: symlink {shown!r} points outside the "
                f"destination through the absolute symlink {'/'.join(candidate)!r}"
            )
        if hops > MAX_SYMLINK_HOPS:
            raise StagingError(
                f"artifact input {name!r}: symlink {shown!r} goes through more "
                f"than {MAX_SYMLINK_HOPS} symlinks (a loop?)"
            )
        pending[:0] = inner.split("/")  # the kernel resolves the link from where it sits


def extract_member(
    archive: tarfile.TarFile, entry: _Entry, tree_fd: int, tree_path: Path, name: str
) -> None:
    """Create one checked member under the fresh tree, never following a symlink."""
    _data_filter(entry.member, tree_path, name)  # a second guard; the plan already checked
    parent_fd = _open_dirs(tree_fd, entry.parts[:-1], create=True)
    leaf, member = entry.parts[-1], entry.member
    try:
        if member.isdir():
            os.close(_make_dir(parent_fd, leaf))
        elif member.issym():
            os.symlink(member.linkname, leaf, dir_fd=parent_fd)
        elif member.islnk():
            assert entry.link is not None  # plan_members resolves every hard link
            _link(tree_fd, entry.link, parent_fd, leaf)
        else:
            source = archive.extractfile(member)
            assert source is not None  # a regular member always has data
            mode = 0o755 if member.mode & 0o111 else 0o644
            _write_new_file(parent_fd, leaf, source, mode)
    finally:
        if parent_fd != tree_fd:
            os.close(parent_fd)


def _data_filter(member: tarfile.TarInfo, tree_path: Path, name: str) -> None:
    data_filter = getattr(tarfile, "data_filter", None)
    if data_filter is None:
        return
    try:
        data_filter(member, str(tree_path))
    except tarfile.FilterError as exc:
        raise StagingError(f"artifact input {name!r}: {exc}") from exc


def _link(tree_fd: int, target: Parts, parent_fd: int, leaf: str) -> None:
    target_parent = _open_dirs(tree_fd, target[:-1], create=False)
    try:
        os.link(
            target[-1], leaf, src_dir_fd=target_parent, dst_dir_fd=parent_fd, follow_symlinks=False
        )
    finally:
        if target_parent != tree_fd:
            os.close(target_parent)


def _make_dir(parent_fd: int, leaf: str) -> int:
    """A descriptor on the directory ``leaf``, created with mode 0o755 if missing."""
    try:
        os.mkdir(leaf, 0o755, dir_fd=parent_fd)
    except FileExistsError:  # implied by an earlier member
        return os.open(leaf, _DIR_OPEN, dir_fd=parent_fd)
    fd = os.open(leaf, _DIR_OPEN, dir_fd=parent_fd)
    os.fchmod(fd, 0o755)  # pin the mode past the umask
    return fd


def _open_dirs(tree_fd: int, parts: Parts, *, create: bool) -> int:
    """A descriptor on ``parts`` under ``tree_fd``, opened component by component."""
    fd = tree_fd
    for part in parts:
        child = _make_dir(fd, part) if create else os.open(part, _DIR_OPEN, dir_fd=fd)
        if fd != tree_fd:
            os.close(fd)
        fd = child
    return fd


def _write_new_file(dir_fd: int, leaf: str, source: IO[bytes], mode: int) -> None:
    fd = os.open(leaf, _NEW_FILE, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as target:
        shutil.copyfileobj(source, target, CHUNK)
        os.fchmod(target.fileno(), mode)


class _Parents:
    """The destination's parent directory, reached from ``root`` without following symlinks.

    Missing directories are created one by one; ``rollback`` removes the ones this created.
    """

    def __init__(self, root: Path, parts: Parts, name: str) -> None:
        self.root, self.parts, self.name = root, parts, name
        self.fds: list[int] = []
        self.created: list[int] = []  # indexes into parts of the directories made here

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def __enter__(self) -> _Parents:
        try:
            self.fds.append(os.open(self.root, os.O_RDONLY | os.O_DIRECTORY))
        except OSError as exc:
            raise StagingError(f"the staging root {self.root} is not a directory: {exc}") from exc
        try:
            for index, part in enumerate(self.parts[:-1]):
                self.fds.append(self._descend(index, part))
        except BaseException:
            self.__exit__(True)
            raise
        return self

    def _descend(self, index: int, part: str) -> int:
        shown = "/".join(self.parts[: index + 1])
        try:
            return os.open(part, _DIR_OPEN, dir_fd=self.fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            existing = _lstat_or_none(self.fd, part)
            kind = _kind(existing.st_mode) if existing else "not openable"
            raise StagingError(
                f"artifact input {self.name!r}: {shown!r} is {kind}; staging "
                "never writes through it"
            ) from exc
        try:
            os.mkdir(part, 0o755, dir_fd=self.fd)
            self.created.append(index)
            return os.open(part, _DIR_OPEN, dir_fd=self.fd)
        except OSError as exc:
            raise StagingError(
                f"artifact input {self.name!r}: cannot create {shown!r}: {exc}"
            ) from exc

    def rollback(self) -> None:
        """Remove (deepest first) the parent directories this created, if still empty."""
        for index in reversed(self.created):
            with contextlib.suppress(OSError):  # not empty: something else put files there
                os.rmdir(self.parts[index], dir_fd=self.fds[index])
        self.created = []

    def __exit__(self, failed: object = None, *_: object) -> None:
        """Close every descriptor; on a failure, first remove the directories made here."""
        if failed is not None:
            self.rollback()
        while self.fds:
            os.close(self.fds.pop())


def _lstat_or_none(dir_fd: int, leaf: str) -> os.stat_result | None:
    try:
        return os.stat(leaf, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _unlink_quietly(dir_fd: int, leaf: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(leaf, dir_fd=dir_fd)


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((label for test, label in kinds if test(mode)), "of an unknown type")
