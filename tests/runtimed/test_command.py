"""What a step runs (runtimed.command): kruntimes' bash Runtime's reading of entrypoint and args
for a Run without source, each case executed through runtimed for real."""

from __future__ import annotations

import pytest

from runtimed.command import build, resolve_entrypoint
from runtimed.staging import PrepareError
from runtimed.tasks import RunService
from tests.helpers.payloads import make_payload


@pytest.fixture
def service(config, reporter, clock) -> RunService:
    return RunService(config, reporter, clock=clock, grace=1.0)


def no_source(*args: str, entrypoint: str | None = None) -> dict:
    task: dict = {"args": list(args)}
    if entrypoint is not None:
        task["entrypoint"] = entrypoint
    return make_payload(source={}, mode={"task": task})


def log(config, uid="run-uid-1") -> str:
    return (config.workspace / ".kruntimes/runs" / uid / "attempt-1.log").read_text()


# --- the decision, as a pure function -------------------------------------------------------


def test_a_staged_script_gets_the_args(tmp_path):
    script = tmp_path / "script.sh"
    assert build(script, tmp_path, None, ("a b", "c")) == ("bash", str(script), "a b", "c")


def test_an_existing_default_script_runs_with_the_args(tmp_path):
    (tmp_path / "script").write_text("true\n")
    assert build(None, tmp_path, None, ("x",)) == ("bash", str(tmp_path / "script"), "x")


def test_an_existing_entrypoint_wins_over_the_args(tmp_path):
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci/run.sh").write_text("true\n")
    argv = build(None, tmp_path, "ci/./run.sh", ("bash", "-c", "exit 3"))
    assert argv == ("bash", str(tmp_path / "ci/run.sh"), "bash", "-c", "exit 3")


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_an_explicit_shell_runs_as_given(tmp_path, shell):
    args = (shell, "-c", 'echo "$0 $1"', "zero", "one")
    assert build(None, tmp_path, None, args) == args


@pytest.mark.parametrize(
    "args", [("bash", "-c"), ("zsh", "-c", "echo"), ("bash", "-e", "echo"), ("sh", "echo hi")]
)
def test_what_is_not_an_explicit_shell_is_a_script(tmp_path, args):
    assert build(None, tmp_path, None, args) == ("bash", "-c", "\n".join(args) + "\n")


def test_one_arg_is_a_bash_command(tmp_path):
    assert build(None, tmp_path, None, ("echo 'a  b'",)) == ("bash", "-c", "echo 'a  b'")


def test_several_args_are_the_lines_of_one_script(tmp_path):
    argv = build(None, tmp_path, None, ("cd sub", "make test"))
    assert argv == ("bash", "-c", "cd sub\nmake test\n")


def test_a_missing_entrypoint_falls_back_to_the_args(tmp_path):
    assert build(None, tmp_path, "ci/run.sh", ("true",)) == ("bash", "-c", "true")


def test_no_file_and_no_args_is_a_prepare_error(tmp_path):
    with pytest.raises(PrepareError) as raised:
        build(None, tmp_path, "ci/run.sh", ())
    assert raised.value.message == "no args or script provided"


@pytest.mark.parametrize(
    ("entrypoint", "expected"),
    [(None, "script"), ("", "script"), ("./a//b/../c.sh", "a/c.sh"), ("a/..x", "a/..x")],
)
def test_entrypoints_are_cleaned(entrypoint, expected):
    assert resolve_entrypoint(entrypoint) == expected


@pytest.mark.parametrize("entrypoint", ["/etc/passwd", "..", "../x", "a/../../x", ".", "a/.."])
def test_entrypoints_outside_the_directory_are_refused(tmp_path, entrypoint):
    with pytest.raises(PrepareError):
        build(None, tmp_path, entrypoint, ("true",))


# --- executed by runtimed -------------------------------------------------------------------


def test_one_arg_runs_with_its_quoting_kept(service, config):
    final = service.execute_run(no_source("printf '[%s]' 'a  b' \"c d\"; echo"))
    assert final["phase"] == "Succeeded", final
    assert log(config) == "[a  b][c d]\n"


def test_several_args_run_as_one_script_sharing_state(service, config):
    final = service.execute_run(no_source("X='one two'", 'cd "$KRUNTIME_RUN_DIR"', 'echo "$X"'))
    assert final["phase"] == "Succeeded", final
    assert log(config) == "one two\n"


def test_a_failing_line_of_several_args_does_not_stop_the_script(service, config):
    final = service.execute_run(no_source("false", "echo after"))
    assert final["phase"] == "Succeeded"  # like the lines of a script without set -e
    assert log(config) == "after\n"


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_an_explicit_shell_gets_its_positional_args(service, config, shell):
    final = service.execute_run(no_source(shell, "-c", 'echo "$0|$1|$2"', "zero", "a b", ""))
    assert final["phase"] == "Succeeded", final
    assert log(config) == "zero|a b|\n"


def test_a_workspace_script_gets_the_args_as_dollar_at(service, config):
    (config.workspace / "script").write_text(
        'for a in "$@"; do printf "<%s>" "$a"; done; echo " $#"\n'
    )
    final = service.execute_run(no_source("a b", "", "*", "$HOME"))
    assert final["phase"] == "Succeeded", final
    assert log(config) == "<a b><><*><$HOME> 4\n"


def test_an_entrypoint_in_the_workspace_runs_from_the_workspace(service, config):
    (config.workspace / "ci").mkdir()
    (config.workspace / "ci/build.sh").write_text('echo "$PWD $1"; exit 7\n')
    final = service.execute_run(no_source("arg", entrypoint="ci/build.sh"))
    assert (final["phase"], final["reason"], final["exitCode"]) == ("Failed", "RuntimeExecute", 7)
    assert log(config) == f"{config.workspace.resolve()} arg\n"


def test_neither_file_nor_args_fails_at_once_in_one_line(service, config, reporter):
    final = service.execute_run(no_source())
    assert (final["phase"], final["reason"], final["exitCode"]) == (
        "Failed",
        "PrepareSource",
        None,
    )
    assert final["message"] == "no args or script provided"
    assert log_missing(config)


def test_a_null_source_is_a_run_without_source(service, config):
    payload = make_payload(source=None, mode={"task": {"args": ["echo null"]}})
    final = service.execute_run(payload)
    assert final["phase"] == "Succeeded", final
    assert log(config) == "null\n"


def log_missing(config) -> bool:
    """Nothing was started: the attempt has no log."""
    return not (config.workspace / ".kruntimes/runs/run-uid-1/attempt-1.log").exists()
