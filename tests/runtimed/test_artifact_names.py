"""One rule for artifact names in all three places that check one: runtimed's collector, the
stores and (in tests/scheduling) the API. A name is one path component: non-empty, at most
255 bytes of UTF-8, no ``/``, ``\\`` or NUL, not ``.`` or ``..``."""

from __future__ import annotations

import io

import pytest

from runtimed.artifacts import ArtifactError, check_name, collect
from runtimed.refs import artifact_name_problem, location_path_problem
from runtimed.stores import FilesystemStore, RunScope, StoreError
from runtimed.stores import check_name as store_check_name

GOOD_NAMES = ["report.txt", "x" * 255, "é" * 127 + "x", ".hidden", "a..b", "dist-1.0.tgz"]
# name -> whether the problem is a length limit
BAD_NAMES = {
    "": False,
    ".": False,
    "..": False,
    "back\\slash": False,
    "a/b": False,
    "../escape": False,
    "nul\x00byte": False,
    "x" * 256: True,
    "é" * 128: True,
    "lone-\udcff-surrogate": False,
}
BAD_IDS = [
    "empty",
    "dot",
    "dotdot",
    "backslash",
    "slash",
    "escape",
    "nul",
    "256-bytes",
    "256-bytes-multibyte",
    "not-utf8",
]


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_good_names_pass_everywhere(name, tmp_path):
    assert artifact_name_problem(name) is None
    check_name(name)
    assert store_check_name(name) == name


@pytest.mark.parametrize(("name", "too_long"), BAD_NAMES.items(), ids=BAD_IDS)
def test_bad_names_are_refused_everywhere(name, too_long):
    problem = artifact_name_problem(name)
    assert problem is not None and problem.too_long is too_long
    with pytest.raises(ArtifactError, match="artifact name"):
        check_name(name)
    with pytest.raises(StoreError, match="artifact name"):
        store_check_name(name)


@pytest.mark.parametrize(
    "name", ["back\\slash", "..", "x" * 256], ids=["backslash", "dotdot", "256-bytes"]
)
def test_the_filesystem_store_writes_no_badly_named_artifact(tmp_path, name):
    root = tmp_path / "claim"
    root.mkdir()
    store = FilesystemStore(root, "claim")
    with pytest.raises(StoreError, match="artifact name"):
        store.put(RunScope("ci", "uid-1"), name, io.BytesIO(b"x"), 1, "text/plain")
    assert list(root.rglob("*")) == []


def test_the_collector_refuses_a_backslash_name_a_step_left(tmp_path):
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()
    (out / "back\\slash").write_text("x")
    with pytest.raises(ArtifactError, match="single path component"):
        collect(out, scratch)


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("namespaces/ci/runs/u/report", True),
        ("a/../b", True),
        ("./a", True),
        ("/tmp/report", False),
        ("a/../../escape", False),
        ("../x", False),
        ("..", False),
        (".", False),
        ("a/..", False),
        ("", False),
        ("a\x00b", False),
    ],
    ids=[
        "layout",
        "inner-dotdot",
        "leading-dot",
        "absolute",
        "escaping",
        "leading-dotdot",
        "dotdot",
        "dot",
        "back-to-root",
        "empty",
        "nul",
    ],
)
def test_a_location_stays_inside_its_root(path, ok):
    assert (location_path_problem(path) is None) is ok
