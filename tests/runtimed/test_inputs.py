"""Staging artifact inputs: verified spools, no write through a symlink, hostile archives."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from runtimed import inputs
from runtimed.artifacts import collect
from runtimed.inputs import StagingError, stage_input


@pytest.fixture
def base(tmp_path) -> Path:
    """tmp_path with the staging root, the spool directory and an ``outside`` to protect."""
    for name in ("root", "spool", "outside"):
        (tmp_path / name).mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("untouched\n")
    return tmp_path


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def ref(data: bytes, kind: str = "directory", **extra) -> dict:
    return {"name": "art", "type": kind, "sizeBytes": len(data), "digest": digest(data), **extra}


def stage(base: Path, data: bytes, path: str, kind: str = "directory", **extra) -> Path:
    return stage_input(
        io.BytesIO(data), ref(data, kind, **extra), base / "root", path, spool_dir=base / "spool"
    )


def snapshot(top: Path) -> list[tuple[str, int, bytes | str | None]]:
    """Every path under ``top`` with its type and content (or link target), no link followed."""
    seen = []
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(directory, name)
            mode = path.lstat().st_mode
            content = (
                os.readlink(path)
                if stat.S_ISLNK(mode)
                else path.read_bytes()
                if stat.S_ISREG(mode)
                else None
            )
            seen.append((str(path.relative_to(top)), stat.S_IFMT(mode), content))
    return sorted(seen)


def make_tar(*entries: tuple[str, str, bytes | str | None], gzip: bool = True) -> bytes:
    """A tar of (name, kind, content or link target) with kind in file/dir/sym/hard/chr/fifo."""
    types = {
        "file": tarfile.REGTYPE,
        "dir": tarfile.DIRTYPE,
        "sym": tarfile.SYMTYPE,
        "hard": tarfile.LNKTYPE,
        "chr": tarfile.CHRTYPE,
        "blk": tarfile.BLKTYPE,
        "fifo": tarfile.FIFOTYPE,
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gzip else "w") as archive:
        for name, kind, payload in entries:
            member = tarfile.TarInfo(name)
            member.type = types[kind]
            member.mode = 0o755 if kind == "dir" else 0o644
            if kind in ("sym", "hard"):
                member.linkname = payload
            data = payload if kind == "file" else b""
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def rejected(
    base: Path, data: bytes, path: str = "in/tree", *words: str, kind: str = "directory", **extra
) -> StagingError:
    """Staging fails with ``words`` in the message and nothing changes anywhere."""
    before = snapshot(base)
    with pytest.raises(StagingError) as caught:
        stage(base, data, path, kind, **extra)
    for word in words:
        assert word in caught.value.message
    assert snapshot(base) == before
    return caught.value


# --- the input path ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["", "/abs", "a//b", "a/./b", "a/../b", "..", ".", "a/", "a\0b", "../escape"]
)
def test_a_bad_input_path_is_refused(base, path):
    rejected(base, b"data", path, kind="file")


# --- file inputs ----------------------------------------------------------------------------


def test_a_file_is_copied_and_its_parents_created(base):
    destination = stage(base, b"payload\n", "deps/lib/file.bin", kind="file")
    assert destination == base / "root" / "deps" / "lib" / "file.bin"
    assert destination.read_bytes() == b"payload\n"
    assert stat.S_IMODE(destination.stat().st_mode) == 0o644
    assert list((base / "spool").iterdir()) == []


def test_a_blob_is_a_file_and_size_and_digest_are_optional(base):
    stage_input(
        io.BytesIO(b"blob"),
        {"name": "b", "type": "blob"},
        base / "root",
        "b.bin",
        spool_dir=base / "spool",
    )
    assert (base / "root" / "b.bin").read_bytes() == b"blob"


def test_an_existing_file_is_replaced(base):
    (base / "root" / "f").write_text("old")
    stage(base, b"new", "f", kind="file")
    assert (base / "root" / "f").read_bytes() == b"new"
    assert sorted(os.listdir(base / "root")) == ["f"]


def test_an_existing_directory_at_a_file_destination_is_an_error(base):
    (base / "root" / "f").mkdir()
    rejected(base, b"new", "f", "directory", kind="file")


def test_a_symlink_at_the_file_destination_is_not_written_through(base):
    (base / "root" / "f").symlink_to(base / "outside" / "keep.txt")
    rejected(base, b"evil", "f", "symlink", kind="file")


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_planted_symlink_parent_is_refused(base, kind):
    (base / "root" / "link").symlink_to(base / "outside")
    data = b"evil" if kind == "file" else make_tar(("x", "file", b"evil"))
    rejected(base, data, "link/target", "'link'", "symlink", kind=kind)


def test_a_planted_symlink_deeper_in_the_path_is_refused(base):
    (base / "root" / "a").mkdir()
    (base / "root" / "a" / "b").symlink_to(base / "outside")
    rejected(base, b"evil", "a/b/c/d", "'a/b'", "symlink", kind="file")


def test_a_file_in_the_middle_of_the_path_is_refused(base):
    (base / "root" / "a").write_text("x")
    rejected(base, b"data", "a/b", "'a'", "regular file", kind="file")


def test_a_digest_mismatch_is_refused(base):
    rejected(base, b"data", "deps/f", "digest", kind="file", digest=digest(b"other"))


def test_a_digest_mismatch_names_neither_digest(base):
    claimed = digest(b"other")
    error = rejected(base, b"data", "deps/f", "digest", kind="file", digest=claimed)
    for told in (claimed, digest(b"data")):
        assert told.removeprefix("sha256:") not in error.message
        assert told.removeprefix("sha256:")[:12] not in error.message


@pytest.mark.parametrize("size", [3, 5])
def test_a_size_mismatch_is_refused(base, size):
    rejected(base, b"data", "deps/f", "4" if size == 5 else "3", kind="file", sizeBytes=size)


@pytest.mark.parametrize("bad", ["md5:abc", "sha256:xyz", "sha256:" + "a" * 63, 12])
def test_a_malformed_digest_is_refused(base, bad):
    rejected(base, b"data", "f", "digest", kind="file", digest=bad)


def test_an_unknown_type_is_refused(base):
    rejected(base, b"data", "f", "type", kind="symlink")


# --- directory inputs -----------------------------------------------------------------------


def test_a_directory_is_extracted_with_links_kept_inside(base):
    data = make_tar(
        ("./", "dir", None),
        ("./data/a.txt", "file", b"alpha"),
        ("data/run.sh", "file", b"#!/bin/sh\n"),
        ("data/empty", "dir", None),
        ("link", "sym", "data/a.txt"),
        ("dirlink", "sym", "data"),
        ("hard", "hard", "data/a.txt"),
        ("up/within", "sym", "../data"),
    )
    destination = stage(base, data, "in/tree")
    assert (destination / "data" / "a.txt").read_bytes() == b"alpha"
    assert os.readlink(destination / "link") == "data/a.txt"
    assert os.readlink(destination / "dirlink") == "data"
    assert os.readlink(destination / "up" / "within") == "../data"
    assert (destination / "hard").stat().st_ino == (destination / "data/a.txt").stat().st_ino
    assert (destination / "data" / "empty").is_dir()
    assert [p.name for p in destination.parent.iterdir()] == ["tree"]  # no temp dir left
    assert list((base / "spool").iterdir()) == []


def test_an_uncompressed_tar_is_detected(base):
    destination = stage(base, make_tar(("f", "file", b"plain"), gzip=False), "t", kind="archive")
    assert (destination / "f").read_bytes() == b"plain"


def test_modes_are_normalised(base):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, mode in (("exe", 0o4711), ("plain", 0o666)):
            member = tarfile.TarInfo(name)
            member.mode, member.size = mode, 1
            archive.addfile(member, io.BytesIO(b"x"))
    destination = stage(base, buffer.getvalue(), "t")
    assert stat.S_IMODE((destination / "exe").stat().st_mode) == 0o755
    assert stat.S_IMODE((destination / "plain").stat().st_mode) == 0o644


def test_an_existing_directory_is_replaced(base):
    old = base / "root" / "t"
    old.mkdir()
    (old / "stale.txt").write_text("stale")
    destination = stage(base, make_tar(("fresh.txt", "file", b"fresh")), "t")
    assert sorted(os.listdir(destination)) == ["fresh.txt"]
    assert sorted(os.listdir(base / "root")) == ["t"]


def test_an_existing_file_at_a_directory_destination_is_an_error(base):
    (base / "root" / "t").write_text("x")
    rejected(base, make_tar(("f", "file", b"x")), "t", "not a directory")


def test_not_a_tar_is_refused(base):
    rejected(base, b"this is not a tar archive at all" * 40, "t", "tar")


HOSTILE = {
    "absolute member": ([("/abs.txt", "file", b"x")], "absolute"),
    "dot-dot member": ([("../x", "file", b"x")], "'..'"),
    "dot-dot inside": ([("a/../../x", "file", b"x")], "'..'"),
    "symlink to /etc": ([("etc", "sym", "/etc")], "etc -> /etc"),
    "symlink up and through": ([("a", "sym", ".."), ("a/x", "file", b"x")], "'a'"),
    "symlink up": ([("a", "sym", "..")], "outside"),
    "symlink far up": ([("d/l", "sym", "../../outside")], "outside"),
    "member through an inner symlink": (
        [("sub/", "dir", None), ("a", "sym", "sub"), ("a/x", "file", b"x")],
        "symlink",
    ),
    "symlink chain escape": ([("a/up", "sym", ".."), ("t", "sym", "a/up/..")], "outside"),
    "symlink loop": ([("a", "sym", "b"), ("b", "sym", "a")], "loop"),
    "hard link to /etc/passwd": ([("h", "hard", "/etc/passwd")], "absolute"),
    "hard link to ../x": ([("h", "hard", "../x")], "'..'"),
    "hard link to a later member": ([("h", "hard", "f"), ("f", "file", b"x")], "earlier"),
    "hard link to a symlink": ([("s", "sym", "f"), ("h", "hard", "s")], "earlier"),
    "hard link to a directory": ([("d", "dir", None), ("h", "hard", "d")], "earlier"),
    "character device": ([("null", "chr", None)], "character device"),
    "block device": ([("sda", "blk", None)], "block device"),
    "fifo": ([("pipe", "fifo", None)], "FIFO"),
    "file then dir of the same name": ([("a", "file", b"x"), ("a/b", "file", b"y")], "'a'"),
    "dir replaced by a symlink": ([("d", "dir", None), ("d", "sym", "/etc")], "more than once"),
    "file given twice": ([("f", "file", b"x"), ("f", "file", b"y")], "more than once"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_and_nothing_is_written(base, case):
    entries, word = HOSTILE[case]
    # a good member first: the refusal must come before anything is extracted
    rejected(base, make_tar(("good.txt", "file", b"fine"), *entries), "in/tree", word)


def test_a_failure_mid_extraction_leaves_nothing_behind(base, monkeypatch):
    written = []

    def fail_on_second(dir_fd, leaf, source, mode):
        written.append(leaf)
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        real_write(dir_fd, leaf, source, mode)

    real_write = inputs._write_new_file
    monkeypatch.setattr(inputs, "_write_new_file", fail_on_second)
    data = make_tar(("a/one", "file", b"1"), ("a/two", "file", b"2"))
    rejected(base, data, "new/parents/tree", "No space left")


def test_a_failure_keeps_parents_that_already_existed(base):
    (base / "root" / "in").mkdir()
    rejected(base, make_tar(("../x", "file", b"x")), "in/tree", "'..'")
    assert (base / "root" / "in").is_dir()


# --- round trip -----------------------------------------------------------------------------


def tree_of(top: Path) -> list[tuple[str, str, bytes | None, bool]]:
    found = []
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(directory, name)
            is_dir = path.is_dir()
            found.append(
                (
                    str(path.relative_to(top)),
                    "dir" if is_dir else "file",
                    None if is_dir else path.read_bytes(),
                    bool(path.stat().st_mode & 0o111),
                )
            )
    return sorted(found)


def test_a_collected_directory_stages_back_to_the_same_tree(base):
    source = base / "artifacts" / "tree"
    (source / "sub" / "deeper").mkdir(parents=True)
    (source / "empty").mkdir()
    (source / "a.txt").write_text("alpha\n")
    (source / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (source / "sub" / "run.sh").chmod(0o755)
    (source / "sub" / "deeper" / "ünïcode.bin").write_bytes(os.urandom(300_000))
    [packed] = collect(base / "artifacts", base / "scratch")
    with open(packed.path, "rb") as stream:
        artifact_ref = {
            "name": packed.name,
            "type": packed.type,
            "sizeBytes": packed.size,
            "digest": packed.digest,
        }
        destination = stage_input(
            stream, artifact_ref, base / "root", "restored/tree", spool_dir=base / "spool"
        )
    assert tree_of(destination) == tree_of(source)


def test_a_collected_file_stages_back_to_the_same_bytes(base):
    (base / "artifacts").mkdir()
    (base / "artifacts" / "report.txt").write_bytes(b"report\n" * 1000)
    [packed] = collect(base / "artifacts", base / "scratch")
    with open(packed.path, "rb") as stream:
        artifact_ref = {
            "name": packed.name,
            "type": packed.type,
            "sizeBytes": packed.size,
            "digest": packed.digest,
        }
        destination = stage_input(
            stream, artifact_ref, base / "root", "report.txt", spool_dir=base / "spool"
        )
    assert destination.read_bytes() == b"report\n" * 1000
