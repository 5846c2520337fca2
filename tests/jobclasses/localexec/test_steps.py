"""What an execution does with its steps: outcomes, shared work dir, env, files, the log."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from jobclasses.localexec import ExecutionSpec, Step, read_log, start
from tests.helpers.localexec import finish

pytestmark = pytest.mark.processes

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def spec(*steps: Step, **fields) -> ExecutionSpec:
    fields.setdefault("env", {})
    fields.setdefault("timeout_seconds", None)
    fields.setdefault("files", {})
    return ExecutionSpec(steps=steps, **fields)


def test_two_steps_share_the_work_dir_and_succeed(root: Path):
    ref = start(
        root,
        "ok",
        spec(
            Step("write", "echo shared > data.txt"), Step("read", 'test "$(cat data.txt)" = shared')
        ),
    )

    assert ref == {"type": "local", "dir": str(root / "ok"), "id": "ok"}
    seen = finish(ref)
    assert seen.phase == "Succeeded" and seen.finished
    assert [(s["name"], s["status"], s["exitCode"]) for s in seen.steps] == [
        ("write", "Succeeded", 0),
        ("read", "Succeeded", 0),
    ]
    times = [seen.start_time, seen.completion_time] + [
        s[key] for s in seen.steps for key in ("startedAt", "finishedAt")
    ]
    assert all(RFC3339.match(value) for value in times), times


def test_a_failing_step_fails_the_execution_and_skips_the_rest(root: Path):
    steps = (
        Step("one", "true"),
        Step("two", "echo before; exit 7; echo after"),
        Step("three", "touch ran"),
    )
    seen = finish(start(root, "fails", spec(*steps)))

    assert seen.phase == "Failed"
    assert "two" in seen.message and "7" in seen.message
    assert [(s["status"], s["exitCode"]) for s in seen.steps] == [
        ("Succeeded", 0),
        ("Failed", 7),
        ("Skipped", None),
    ]
    assert not (root / "fails" / "work" / "ran").exists()


def test_sh_e_stops_a_step_at_its_first_failing_command(root: Path):
    seen = finish(start(root, "errexit", spec(Step("only", "false; touch reached"))))

    assert (seen.phase, seen.steps[0]["exitCode"]) == ("Failed", 1)
    assert not (root / "errexit" / "work" / "reached").exists()


def test_the_env_is_the_whole_environment_of_every_step(root: Path, monkeypatch):
    monkeypatch.setenv("CALLER_SECRET", "must-not-leak")
    script = 'printf "%s|%s|%s|%s|%s\\n" "$GREETING" "${CALLER_SECRET-unset}" "$HOME" "$LANG" "$PATH" > env.out'
    ref = start(
        root,
        "env",
        spec(
            Step("env", script),
            Step("again", 'test "$GREETING" = "hello world"'),
            env={"GREETING": "hello world", "LANG": "C"},
        ),
    )

    assert finish(ref).phase == "Succeeded"
    greeting, leaked, home, lang, path = (
        (root / "env" / "work" / "env.out").read_text().strip().split("|")
    )
    assert (greeting, leaked, lang) == ("hello world", "unset", "C")
    assert home == str(root / "env" / "work")
    assert "/usr/bin" in path.split(":")


def test_inline_files_are_written_before_the_first_step_and_steps_run_in_working_dir(root: Path):
    files = {"src/build.sh": "#!/bin/sh\necho built > ../out/result\n", "README": "hello\n"}
    ref = start(
        root,
        "files",
        spec(
            Step("build", "pwd > where; mkdir -p ../out; ./build.sh; cat ../README"),
            files=files,
            working_dir="src",
        ),
    )

    assert finish(ref).phase == "Succeeded"
    work = root / "files" / "work"
    assert (work / "src" / "where").read_text().strip() == str(work / "src")
    assert (work / "out" / "result").read_text() == "built\n"
    assert "hello" in read_log(ref)


def test_working_dir_is_created(root: Path):
    seen = finish(start(root, "wd", spec(Step("pwd", "pwd"), working_dir="a/b")))

    assert seen.phase == "Succeeded"
    assert (root / "wd" / "work" / "a" / "b").is_dir()


@pytest.mark.parametrize(
    "fields",
    [
        {"files": {"/etc/evil": "x"}},
        {"files": {"../evil": "x"}},
        {"files": {"a/../../evil": "x"}},
        {"files": {"": "x"}},
        {"files": {"a": "x", "a/b": "y"}},
        {"working_dir": "/tmp"},
        {"working_dir": "../up"},
        {"env": {"BAD=NAME": "x"}},
    ],
)
def test_unsafe_specs_are_refused_before_anything_is_claimed(root: Path, fields):
    with pytest.raises(ValueError):
        start(root, "unsafe", spec(Step("s", "true"), **fields))

    assert not (root / "unsafe").exists()


@pytest.mark.parametrize("execution_id", ["", "a/b", "..", ".hidden"])
def test_an_execution_id_must_be_one_plain_path_segment(root: Path, execution_id: str):
    with pytest.raises(ValueError):
        start(root, execution_id, spec(Step("s", "true")))


def test_the_log_holds_every_step_in_order_under_a_header(root: Path):
    ref = start(
        root,
        "log",
        spec(Step("build", "echo compiling; echo oops >&2"), Step("test", "echo testing")),
    )
    finish(ref)

    text = read_log(ref)
    lines = text.splitlines()
    assert lines.index("==> step build") < lines.index("compiling") < lines.index("==> step test")
    assert lines.index("oops") < lines.index("==> step test") < lines.index("testing")
    assert read_log(ref, limit_bytes=8) == "testing\n"


def test_spec_json_is_private_to_the_owner_and_never_logged(root: Path):
    ref = start(root, "secret", spec(Step("s", "true"), env={"TOKEN": "s3cr3t-value"}))
    finish(ref)

    mode = stat.S_IMODE(os.stat(root / "secret" / "spec.json").st_mode)
    assert mode == 0o600
    assert "s3cr3t-value" not in read_log(ref)
    assert "s3cr3t-value" not in (root / "secret" / "result.json").read_text()
