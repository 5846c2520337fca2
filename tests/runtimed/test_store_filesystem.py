"""The filesystem ArtifactStore: layout, replace, no-follow writes and reads, scoped refs."""

from __future__ import annotations

import io
import os

import pytest

from runtimed.stores import FilesystemStore, RefOutOfScope, RunScope, StoreError

SCOPE = RunScope("ci", "uid-1")
RUN_DIR = "namespaces/ci/runs/uid-1"


@pytest.fixture
def root(tmp_path):
    path = tmp_path / "artifacts"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path):
    """Where a planted symlink points: nothing may ever be written here."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret").write_bytes(b"do not touch")
    return path


@pytest.fixture
def store(root):
    return FilesystemStore(root, "artifacts")


def put(store, data: bytes, name: str = "out.tar", scope: RunScope = SCOPE) -> dict:
    location = store.put(scope, name, io.BytesIO(data), len(data), "application/x-tar")
    return {"name": name, "driver": "filesystem", "type": "archive", "location": location}


def tree(path) -> dict:
    """Every entry below ``path`` (not following symlinks) with its bytes or link target."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for entry in dirnames + filenames:
            full = os.path.join(dirpath, entry)
            relative = os.path.relpath(full, path)
            if os.path.islink(full):
                found[relative] = ("link", os.readlink(full))
            elif os.path.isfile(full):
                with open(full, "rb") as handle:
                    found[relative] = handle.read()
            else:
                found[relative] = "dir"
    return found


def test_put_writes_the_layout_and_open_reads_the_exact_bytes(store, root):
    data = bytes(range(256)) * 1000

    ref = put(store, data)

    assert ref["location"] == {
        "filesystem": {"path": f"{RUN_DIR}/out.tar", "volumeClaimName": "artifacts"}
    }
    assert (root / RUN_DIR / "out.tar").read_bytes() == data
    with store.open(ref) as stream:
        assert stream.read() == data


def test_put_stores_exactly_size_bytes(store, root):
    store.put(SCOPE, "head", io.BytesIO(b"0123456789"), 4, "text/plain")

    assert (root / RUN_DIR / "head").read_bytes() == b"0123"


def test_a_short_source_fails_and_leaves_nothing(store, root):
    with pytest.raises(StoreError, match="short"):
        store.put(SCOPE, "out.tar", io.BytesIO(b"abc"), 10, "application/x-tar")

    assert os.listdir(root / RUN_DIR) == []


def test_second_put_replaces_and_leaves_no_temp_file(store, root):
    put(store, b"first attempt, longer content")
    ref = put(store, b"second")

    assert os.listdir(root / RUN_DIR) == ["out.tar"]
    with store.open(ref) as stream:
        assert stream.read() == b"second"


def test_put_fsyncs_the_file(store, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    put(store, b"x" * 1234)

    assert 1234 in synced


def test_put_rejects_a_name_that_is_not_one_component(store, root):
    for name in ("../escape", "a/b", "..", ""):
        with pytest.raises(StoreError):
            put(store, b"data", name=name)
    assert tree(root) == {}


@pytest.mark.parametrize("level", ["namespaces", "namespaces/ci", "namespaces/ci/runs", RUN_DIR])
def test_a_symlink_at_any_layout_level_makes_put_fail(store, root, outside, level):
    parent = (root / level).parent
    parent.mkdir(parents=True, exist_ok=True)
    (root / level).symlink_to(outside, target_is_directory=True)
    before = tree(outside)

    with pytest.raises(StoreError, match="symbolic link"):
        put(store, b"payload")

    assert tree(outside) == before
    assert os.readlink(root / level) == str(outside)


def test_a_dangling_symlink_at_a_layout_level_creates_nothing(store, root, tmp_path):
    target = tmp_path / "not-yet"
    (root / "namespaces").symlink_to(target)

    with pytest.raises(StoreError):
        put(store, b"payload")

    assert not target.exists()


def test_a_symlink_as_the_target_name_makes_put_fail(store, root, outside):
    (root / RUN_DIR).mkdir(parents=True)
    (root / RUN_DIR / "out.tar").symlink_to(outside / "secret")

    with pytest.raises(StoreError, match="symbolic link"):
        put(store, b"payload")

    assert (outside / "secret").read_bytes() == b"do not touch"
    assert os.path.islink(root / RUN_DIR / "out.tar")
    assert os.listdir(root / RUN_DIR) == ["out.tar"]


def test_a_dangling_symlink_as_the_target_name_makes_put_fail(store, root, outside):
    (root / RUN_DIR).mkdir(parents=True)
    (root / RUN_DIR / "out.tar").symlink_to(outside / "new-file")

    with pytest.raises(StoreError):
        put(store, b"payload")

    assert not (outside / "new-file").exists()


def test_open_does_not_follow_a_symlinked_object(store, root, outside):
    (root / RUN_DIR).mkdir(parents=True)
    (root / RUN_DIR / "out.tar").symlink_to(outside / "secret")
    ref = {"driver": "filesystem", "location": {"filesystem": {"path": f"{RUN_DIR}/out.tar"}}}

    with pytest.raises(StoreError):
        store.open(ref)


@pytest.mark.parametrize("level", ["namespaces", "namespaces/ci/runs", RUN_DIR])
def test_open_does_not_follow_a_symlinked_directory(store, root, outside, level):
    (root / level).parent.mkdir(parents=True, exist_ok=True)
    (root / level).symlink_to(outside, target_is_directory=True)
    # What the ref would reach through the symlink, were it followed.
    (outside / "namespaces/ci/runs/uid-1").mkdir(parents=True)
    for where in ("namespaces/ci/runs/uid-1", "ci/runs/uid-1", "uid-1", ""):
        (outside / where).mkdir(parents=True, exist_ok=True)
        (outside / where / "secret").write_bytes(b"do not touch")
    ref = {"driver": "filesystem", "location": {"filesystem": {"path": f"{RUN_DIR}/secret"}}}

    with pytest.raises(StoreError):
        store.open(ref)


def test_open_of_a_missing_object_says_so(store):
    put(store, b"other", name="other")
    ref = {"driver": "filesystem", "location": {"filesystem": {"path": f"{RUN_DIR}/gone"}}}

    with pytest.raises(StoreError, match="does not exist") as raised:
        store.open(ref)
    assert not isinstance(raised.value, RefOutOfScope)


def test_open_of_a_run_never_stored_says_so(store):
    ref = {
        "driver": "filesystem",
        "location": {"filesystem": {"path": "namespaces/ci/runs/never/out.tar"}},
    }

    with pytest.raises(StoreError, match="does not exist"):
        store.open(ref)


def test_open_refuses_a_directory(store, root):
    (root / RUN_DIR / "dir").mkdir(parents=True)
    ref = {"driver": "filesystem", "location": {"filesystem": {"path": f"{RUN_DIR}/dir"}}}

    with pytest.raises(StoreError, match="not a regular file"):
        store.open(ref)


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret",
        "/etc/passwd",
        f"{RUN_DIR}/../../../../../outside/secret",
        f"{RUN_DIR}/..",
        f"{RUN_DIR}/.",
        "namespaces/ci/runs/../secret",
        "namespaces/ci/runs//secret",
        f"{RUN_DIR}/",
        f"{RUN_DIR}/a/b",
        f"/{RUN_DIR}/out.tar",
        "namespaces/ci/other/uid-1/out.tar",
        "volumes/ci/runs/uid-1/out.tar",
        RUN_DIR,
        "",
        None,
        42,
    ],
)
def test_open_refuses_a_path_outside_the_layout(store, path):
    put(store, b"payload")
    ref = {"driver": "filesystem", "location": {"filesystem": {"path": path}}}

    with pytest.raises(RefOutOfScope):
        store.open(ref)


def test_open_refuses_another_driver_or_no_location(store):
    location = put(store, b"payload")["location"]

    with pytest.raises(RefOutOfScope):
        store.open({"driver": "s3", "location": location})
    with pytest.raises(RefOutOfScope):
        store.open({"driver": "filesystem", "location": {"s3": {"bucket": "b", "key": "k"}}})
    with pytest.raises(RefOutOfScope):
        store.open({"driver": "filesystem"})


def test_open_refuses_another_volume_claim(store):
    location = put(store, b"payload")["location"]["filesystem"]
    elsewhere = {
        "driver": "filesystem",
        "location": {"filesystem": {**location, "volumeClaimName": "other-claim"}},
    }
    unnamed = {"driver": "filesystem", "location": {"filesystem": {"path": location["path"]}}}

    with pytest.raises(RefOutOfScope, match="other-claim"):
        store.open(elsewhere)
    with store.open(unnamed) as stream:
        assert stream.read() == b"payload"


def test_delete_removes_one_artifact_and_ignores_a_missing_one(store, root):
    put(store, b"a", name="a")
    put(store, b"b", name="b")

    store.delete(SCOPE, "a")
    store.delete(SCOPE, "a")
    store.delete(RunScope("ci", "never"), "a")

    assert os.listdir(root / RUN_DIR) == ["b"]


def test_delete_removes_a_symlink_not_its_target(store, root, outside):
    (root / RUN_DIR).mkdir(parents=True)
    (root / RUN_DIR / "out.tar").symlink_to(outside / "secret")

    store.delete(SCOPE, "out.tar")

    assert os.listdir(root / RUN_DIR) == []
    assert (outside / "secret").read_bytes() == b"do not touch"


def test_delete_does_not_walk_through_a_symlinked_run_dir(store, root, outside):
    (root / RUN_DIR).parent.mkdir(parents=True)
    (root / RUN_DIR).symlink_to(outside, target_is_directory=True)

    store.delete(SCOPE, "secret")

    assert (outside / "secret").read_bytes() == b"do not touch"


def test_delete_run_removes_and_counts_only_that_run(store, root):
    for name in ("a", "b", "c"):
        put(store, name.encode(), name=name)
    other = RunScope("ci", "uid-10")
    put(store, b"keep", name="a", scope=other)
    put(store, b"keep", name="a", scope=RunScope("other-ns", "uid-1"))

    assert store.delete_run(SCOPE) == 3

    assert not (root / RUN_DIR).exists()
    assert (root / "namespaces/ci/runs/uid-10/a").read_bytes() == b"keep"
    assert (root / "namespaces/other-ns/runs/uid-1/a").read_bytes() == b"keep"
    assert store.delete_run(SCOPE) == 0


def test_delete_run_of_a_run_never_stored_is_zero(store):
    assert store.delete_run(RunScope("ci", "never")) == 0


def test_delete_run_does_not_follow_symlinks_inside_the_run(store, root, outside):
    put(store, b"a", name="a")
    (root / RUN_DIR / "link").symlink_to(outside, target_is_directory=True)

    assert store.delete_run(SCOPE) == 2

    assert not (root / RUN_DIR).exists()
    assert (outside / "secret").read_bytes() == b"do not touch"


@pytest.mark.parametrize("level", ["namespaces", "namespaces/ci/runs", RUN_DIR])
def test_delete_run_does_not_follow_a_symlinked_layout_dir(store, root, outside, level):
    (root / level).parent.mkdir(parents=True, exist_ok=True)
    (root / level).symlink_to(outside, target_is_directory=True)
    for where in ("namespaces/ci/runs/uid-1", "ci/runs/uid-1", "uid-1"):
        (outside / where).mkdir(parents=True)
        (outside / where / "secret").write_bytes(b"do not touch")
    before = tree(outside)

    assert store.delete_run(SCOPE) == 0

    assert tree(outside) == before
    assert root.is_dir()
