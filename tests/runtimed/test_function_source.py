"""A function's working directory (``runtimed.function_source``) and its payload fields."""

from __future__ import annotations

import os

import pytest

from runtimed import function_source
from runtimed.payload import PayloadError, Source, parse
from runtimed.staging import PrepareError


def test_inline_source_is_written_at_inline_path_below_a_fresh_directory(tmp_path):
    source = Source(inline="def invoke(r):\n    return r\n", inline_path="pkg/app.py")
    root = function_source.prepare(source, tmp_path / "attempt-1", tmp_path, git_timeout=5)
    assert root == tmp_path / "attempt-1" / "function"
    assert (root / "pkg/app.py").read_text() == source.inline
    assert oct(os.stat(root / "pkg/app.py").st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    "path",
    ["", "/etc/passwd", "../app.py", "a/../../b.py", "./app.py", "a//b.py", "a/", "x" * 4097],
)
def test_inline_path_must_be_a_plain_relative_path(tmp_path, path):
    with pytest.raises(PrepareError):
        function_source.prepare(
            Source(inline="x", inline_path=path), tmp_path / "a", tmp_path, git_timeout=5
        )
    assert not (tmp_path.parent / "app.py").exists()


def test_without_source_the_function_works_in_its_workspace(tmp_path):
    assert function_source.prepare(Source(), tmp_path / "a", tmp_path, git_timeout=5) == tmp_path


def test_the_digest_changes_with_every_registration_input_and_only_those():
    source = Source(inline="a", inline_path="app.py")
    base = function_source.digest(source, "app.invoke", {"A": "1"}, 30)
    assert base.startswith("sha256:") and len(base) == 7 + 64
    assert base == function_source.digest(source, "app.invoke", {"A": "1"}, 30)
    assert base != function_source.digest(
        Source(inline="b", inline_path="app.py"), "app.invoke", {"A": "1"}, 30
    )
    assert base != function_source.digest(source, "app.other", {"A": "1"}, 30)
    assert base != function_source.digest(source, "app.invoke", {"A": "2"}, 30)
    assert base != function_source.digest(source, "app.invoke", {"A": "1"}, 60)


def payload(mode: dict, source: dict | None = None) -> dict:
    return {
        "run": {"namespace": "ns", "name": "fn", "uid": "u1", "attempt": 1},
        "pod": {"name": "p", "uid": "pu"},
        "source": source or {},
        "mode": mode,
    }


def test_a_function_payload_carries_handler_idle_timeout_and_inline_path():
    spec = parse(
        payload(
            {"function": {"handler": "app.invoke", "idleTimeoutSeconds": 30}},
            {"inline": "x", "inlinePath": "app.py"},
        )
    )
    assert (spec.mode, spec.handler, spec.idle_timeout_seconds) == ("function", "app.invoke", 30)
    assert spec.source.inline_path == "app.py"


@pytest.mark.parametrize(
    "function",
    [
        {},
        {"handler": ""},
        {"handler": "a.b", "idleTimeoutSeconds": -1},
        {"handler": "a.b", "idleTimeoutSeconds": True},
    ],
)
def test_a_malformed_function_payload_is_refused(function):
    with pytest.raises(PayloadError):
        parse(payload({"function": function}))
