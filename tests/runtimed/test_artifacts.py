"""Packing the artifacts directory: files as they are, directories as reproducible .tar.gz."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import socket
import tarfile
from pathlib import Path

import pytest

from runtimed import artifacts
from runtimed.artifacts import ArtifactError, Packed, check_name, collect


@pytest.fixture
def out(tmp_path) -> Path:
    path = tmp_path / "artifacts"
    path.mkdir()
    return path


@pytest.fixture
def scratch(tmp_path) -> Path:
    return tmp_path / "scratch"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def refused(out: Path, scratch: Path, *words: str, **limits) -> ArtifactError:
    with pytest.raises(ArtifactError) as caught:
        collect(out, scratch, **limits)
    for word in words:
        assert word in caught.value.message
    return caught.value


def make_tree(root: Path) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "sub" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "sub" / "run.sh").chmod(0o700)
    (root / "sub" / "deeper" / "data.bin").write_bytes(bytes(range(256)) * 64)


def members(archive: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(archive, "r:gz") as opened:
        return opened.getmembers()


def test_a_missing_or_empty_directory_has_no_artifacts(tmp_path, out, scratch):
    assert collect(tmp_path / "absent", scratch) == []
    assert collect(out, scratch) == []


def test_a_file_is_uploaded_as_it_is(out, scratch):
    (out / "report.txt").write_bytes(b"all green\n")
    [packed] = collect(out, scratch)
    assert packed == Packed(
        "report.txt", "file", out / "report.txt", 10, sha256(b"all green\n"), "text/plain"
    )
    assert len(packed.digest) == len("sha256:") + 64


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("bundle.tar.gz", "application/gzip"),
        ("bundle.tgz", "application/gzip"),
        ("no-extension", "application/octet-stream"),
        ("data.json", "application/json"),
    ],
)
def test_file_content_types(out, scratch, name, content_type):
    (out / name).write_bytes(b"x")
    assert collect(out, scratch)[0].content_type == content_type


def test_results_are_sorted_by_name(out, scratch):
    for name in ("b", "c", "a"):
        (out / name).write_text(name)
    (out / "dir").mkdir()
    assert [packed.name for packed in collect(out, scratch)] == ["a", "b", "c", "dir"]


def test_a_directory_becomes_a_normalised_tar_gz(out, scratch):
    make_tree(out / "tree")
    [packed] = collect(out, scratch)
    assert (packed.name, packed.type, packed.content_type) == (
        "tree",
        "directory",
        "application/gzip",
    )
    assert packed.path.parent == scratch and packed.path.name.endswith(".tar.gz")
    data = packed.path.read_bytes()
    assert (packed.size, packed.digest) == (len(data), sha256(data))
    listed = members(packed.path)
    assert [member.name for member in listed] == [
        "a.txt",
        "empty",
        "sub",
        "sub/deeper",
        "sub/deeper/data.bin",
        "sub/run.sh",
    ]
    assert all((m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "") for m in listed)
    modes = {member.name: member.mode for member in listed}
    assert modes == {
        "a.txt": 0o644,
        "empty": 0o755,
        "sub": 0o755,
        "sub/deeper": 0o755,
        "sub/deeper/data.bin": 0o644,
        "sub/run.sh": 0o755,
    }
    assert all(not member.pax_headers for member in listed)


def test_the_gzip_header_has_no_time_and_no_name(out, scratch):
    make_tree(out / "tree")
    data = collect(out, scratch)[0].path.read_bytes()
    assert data[:3] == b"\x1f\x8b\x08"
    assert data[3] == 0  # flags: no FNAME, no FCOMMENT, no FEXTRA
    assert data[4:8] == b"\0\0\0\0"  # mtime


def test_a_hard_link_is_stored_as_a_regular_file(out, scratch):
    (out / "tree").mkdir()
    (out / "tree" / "one").write_text("same inode\n")
    os.link(out / "tree" / "one", out / "tree" / "two")
    [packed] = collect(out, scratch)
    with tarfile.open(packed.path, "r:gz") as opened:
        assert [m.type for m in opened.getmembers()] == [tarfile.REGTYPE, tarfile.REGTYPE]
        assert opened.extractfile("two").read() == b"same inode\n"


def pack_tree(base: Path, *, umask: int, reverse: bool, mtime: int) -> bytes:
    """Build the same tree with a different umask, creation order and mtimes; pack it."""
    out = base / "artifacts"
    tree = out / "tree"
    names = ["b.txt", "a.txt", "c/z.txt", "c/y.sh", "d/e/f.txt"]
    previous = os.umask(umask)
    try:
        for name in sorted(names, reverse=reverse):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(f"content of {name}\n")
        (tree / "c" / "y.sh").chmod(0o750 if reverse else 0o755)
    finally:
        os.umask(previous)
    for path in [tree, *tree.rglob("*")]:
        os.utime(path, (mtime, mtime))
    return collect(out, base / "scratch")[0].path.read_bytes()


def test_the_same_tree_packs_to_the_same_bytes(tmp_path):
    first = pack_tree(tmp_path / "one", umask=0o022, reverse=False, mtime=1_000_000)
    second = pack_tree(tmp_path / "two", umask=0o077, reverse=True, mtime=2_000_000_000)
    assert first == second


def test_packing_twice_gives_the_same_digest(out, scratch):
    make_tree(out / "tree")
    assert collect(out, scratch)[0].digest == collect(out, scratch)[0].digest


def test_32_artifacts_pass_and_33_fail(out, scratch):
    for index in range(32):
        (out / f"a{index:02d}").write_text("x")
    assert len(collect(out, scratch)) == 32
    (out / "a32").write_text("x")
    refused(out, scratch, "33", "32")


def test_a_configured_count_limit(out, scratch):
    for name in "abc":
        (out / name).write_text("x")
    assert len(collect(out, scratch, max_count=3)) == 3
    refused(out, scratch, "at most 2", max_count=2)


def test_a_255_byte_name_passes_including_multibyte_characters(out, scratch):
    name = "é" * 127 + "x"  # 127 * 2 + 1 = 255 bytes
    (out / name).write_text("x")
    assert collect(out, scratch)[0].name == name


def test_a_256_byte_name_is_refused():
    check_name("x" * 255)
    check_name("é" * 127 + "x")
    with pytest.raises(ArtifactError, match="256 bytes"):
        check_name("é" * 128)
    with pytest.raises(ArtifactError, match="256 bytes"):
        check_name("x" * 256)


def test_a_name_that_is_not_utf8_is_refused(out, scratch):
    os.close(os.open(os.fsencode(out) + b"/bad-\xff", os.O_CREAT | os.O_WRONLY, 0o644))
    refused(out, scratch, "UTF-8")


def test_a_top_level_symlink_is_refused(tmp_path, out, scratch):
    (tmp_path / "secret").write_text("x")
    (out / "link").symlink_to(tmp_path / "secret")
    refused(out, scratch, "'link'", "symlink")


def test_a_symlink_deep_inside_a_directory_is_refused(out, scratch):
    (out / "tree" / "a" / "b").mkdir(parents=True)
    (out / "tree" / "ok.txt").write_text("x")
    (out / "tree" / "a" / "b" / "etc").symlink_to("/etc")
    refused(out, scratch, "'tree'", "a/b/etc", "symlink")
    assert not scratch.exists() or list(scratch.iterdir()) == []


def test_a_fifo_is_refused_at_the_top_and_inside(out, scratch):
    os.mkfifo(out / "pipe")
    refused(out, scratch, "'pipe'", "FIFO")
    (out / "pipe").unlink()
    (out / "tree").mkdir()
    os.mkfifo(out / "tree" / "pipe")
    refused(out, scratch, "'tree'", "pipe", "FIFO")


def test_a_socket_inside_a_directory_is_refused(out, scratch, monkeypatch):
    (out / "tree").mkdir()
    monkeypatch.chdir(out / "tree")  # a socket path must be short
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind("sock")
        refused(out, scratch, "'tree'", "sock", "socket")
    finally:
        server.close()


def test_a_device_is_refused_at_the_top_and_inside_a_directory(scratch):
    # the system's own /dev/null: a real character device, no CAP_MKNOD needed to make one
    dev = os.open("/dev", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(ArtifactError, match="'null' is a character device"):
            artifacts.pack(dev, Path("/dev"), "null", scratch, 1 << 20)
        with pytest.raises(ArtifactError, match="'tree': 'null' is a character device"):
            artifacts._checked_entry(dev, "null", "tree", "null")
    finally:
        os.close(dev)


def test_the_artifacts_directory_itself_must_not_be_a_symlink(tmp_path, scratch):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    refused(tmp_path / "link", scratch, "symlink")


def test_a_file_swapped_for_a_symlink_after_the_check_is_not_followed(
    tmp_path, out, scratch, monkeypatch
):
    (tmp_path / "secret").write_text("secret")
    (out / "tree").mkdir()
    (out / "tree" / "f").symlink_to(tmp_path / "secret")
    regular = os.stat(tmp_path / "secret")
    monkeypatch.setattr(
        artifacts,
        "_lstat",
        lambda dir_fd, leaf, where: (
            regular if leaf == "f" else os.stat(leaf, dir_fd=dir_fd, follow_symlinks=False)
        ),
    )
    refused(out, scratch, "symlink")


def test_a_file_at_the_artifact_limit_passes_and_one_byte_more_fails(out, scratch):
    (out / "f").write_bytes(b"x" * 100)
    assert collect(out, scratch, max_artifact_bytes=100)[0].size == 100
    refused(out, scratch, "'f'", "99", max_artifact_bytes=99)


def test_the_directory_limit_counts_the_packed_size(out, scratch):
    make_tree(out / "tree")
    size = collect(out, scratch)[0].size
    assert collect(out, scratch, max_artifact_bytes=size)[0].size == size
    refused(out, scratch, "'tree'", str(size - 1), max_artifact_bytes=size - 1)


def test_the_run_limit_counts_every_artifact(out, scratch):
    (out / "a").write_bytes(b"x" * 60)
    (out / "b").write_bytes(b"x" * 40)
    assert sum(packed.size for packed in collect(out, scratch, max_run_bytes=100)) == 100
    refused(out, scratch, "'b'", "100", "99", max_run_bytes=99)


def test_archives_already_written_are_removed_when_collection_fails(out, scratch):
    make_tree(out / "a-tree")
    (out / "z-link").symlink_to("/etc")
    refused(out, scratch, "'z-link'")
    assert list(scratch.iterdir()) == []


def test_the_archive_is_a_plain_tar_inside_the_gzip(out, scratch):
    make_tree(out / "tree")
    packed = collect(out, scratch)[0]
    with gzip.open(packed.path) as stream:
        raw = stream.read()
    assert len(raw) % tarfile.RECORDSIZE == 0
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as opened:
        assert opened.extractfile("a.txt").read() == b"alpha\n"


def test_a_name_inside_a_directory_that_is_not_utf8_is_refused(out, scratch):
    (out / "tree").mkdir()
    os.close(os.open(os.fsencode(out) + b"/tree/bad-\xff", os.O_CREAT | os.O_WRONLY, 0o644))
    refused(out, scratch, "'tree'", "UTF-8")
