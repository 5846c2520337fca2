"""krt's parsing, the objects its flags build, its exit codes and tables: pure functions,
tested without a server (tests/integration/test_krt_end_to_end.py drives the real one)."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from portal.krt import cli, manifests, output, runs, wftable
from portal.krt.errors import KrtError


def parse(*argv: str):
    return cli.build_parser().parse_args(list(argv))


def test_the_command_after_the_double_dash_is_kept_word_for_word():
    args = parse("run", "--runtime", "bash", "--wait", "--", "sh", "-c", "echo hi; exit 3")
    assert args.args == ["sh", "-c", "echo hi; exit 3"] and args.wait and args.runtime == "bash"


@pytest.mark.parametrize(
    "argv",
    [
        ("-n", "team", "--context", "prod", "--as", "bob", "get", "runs"),
        ("get", "runs", "-n", "team", "--context", "prod", "--as", "bob"),
        ("--context", "prod", "get", "-n", "team", "runs", "--as", "bob"),
    ],
)
def test_connection_flags_go_before_or_after_the_subcommand(argv):
    args = parse(*argv)
    assert (args.namespace, args.context, args.as_user, args.type) == (
        "team",
        "prod",
        "bob",
        "runs",
    )


def test_connection_flags_left_out_stay_unset():
    args = parse("logs", "-f", "r1", "--attempt", "2")
    assert not hasattr(args, "namespace") and not hasattr(args, "kubeconfig")
    assert (args.run, args.follow, args.attempt) == ("r1", True, 2)


@pytest.mark.parametrize(
    "argv",
    [
        ("get", "runs", "-o", "table"),
        ("run", "--", "true"),  # --runtime is required
        ("wf", "run"),  # -f is required
        ("invoke", "r", "-d", "{}", "-f", "body.json"),
        ("nosuch",),
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        parse(*argv)
    assert exited.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_nested_commands_parse():
    art = parse("artifacts", "get", "r1", "dist.tgz", "-o", "out.tgz")
    assert (art.run, art.artifact, art.output) == ("r1", "dist.tgz", "out.tgz")
    rerun = parse("wf", "rerun", "w1", "--failed", "--wait", "--timeout", "30")
    assert (rerun.run, rerun.failed, rerun.wait, rerun.timeout) == ("w1", True, True, 30.0)
    assert parse("wf", "rerun", "w1", "--set", "who=me").set == ["who=me"]
    trigger = parse("wf", "trigger", "build", "--set", "ref=main", "--set", "x=a=b")
    assert manifests.key_values(trigger.set, "--set") == {"ref": "main", "x": "a=b"}


def test_the_plugin_name_shows_in_usage():
    assert cli.program_name("/usr/local/bin/kubectl-kruntimes") == "kubectl kruntimes"
    assert cli.program_name("krt") == "krt"


def test_a_task_run_from_a_command_has_args_and_no_source():
    body = manifests.task_run(namespace="ci", runtime="bash", args=["sh", "-c", "x"],
                              env=["A=1", "B=x=y"], workspace="cache", timeout="1m30s")  # fmt: skip
    assert body["metadata"] == {"generateName": "bash-", "namespace": "ci"}
    assert body["spec"] == {
        "runtime": "bash",
        "mode": {"task": {"args": ["sh", "-c", "x"]}},
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "x=y"}],
        "workspace": {"name": "cache"},
        "timeout": "1m30s",
    }


def test_a_task_run_from_a_file_is_inline_source(tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("echo hi\n")
    body = manifests.task_run(namespace="ci", runtime="bash", name="one", file=str(script))
    assert body["metadata"] == {"name": "one", "namespace": "ci"}
    assert body["spec"] == {
        "runtime": "bash",
        "mode": {"task": {}},
        "source": {"inline": "echo hi\n"},
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "nothing to run"),
        ({"args": ["x"], "env": ["NOVALUE"]}, '--env "NOVALUE": expected KEY=VALUE'),
        ({"args": ["x"], "env": ["=v"]}, '--env "=v": expected KEY=VALUE'),
        ({"args": ["x"], "env": ["1 A=v"]}, "not a valid environment variable name"),
        ({"args": ["x"], "timeout": "30"}, "expected a duration"),
        ({"file": "/no/such/file"}, "/no/such/file: No such file or directory"),
    ],
)
def test_bad_flags_are_one_line_errors(kwargs, message):
    with pytest.raises(KrtError, match=message):
        manifests.task_run(namespace="ci", runtime="bash", **kwargs)


def test_a_function_run():
    body = manifests.function_run(namespace="ci", runtime="python", source="def f(x): ...",
                                  handler="app.f", inline_path="app.py", idle_timeout_seconds=60)  # fmt: skip
    assert body["spec"] == {
        "runtime": "python",
        "source": {"inline": "def f(x): ...", "inlinePath": "app.py"},
        "mode": {"function": {"handler": "app.f", "idleTimeoutSeconds": 60}},
    }


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ({"phase": "Succeeded", "exitCode": 0}, 0),
        ({"phase": "Succeeded"}, 0),
        ({"phase": "Failed", "exitCode": 3}, 3),
        ({"phase": "Failed", "reason": "PrepareSource"}, 1),  # no step ran: no exit code
        ({"phase": "Failed", "exitCode": 0}, 1),  # failed after the step (outputs invalid)
        ({"phase": "Timeout", "exitCode": 143}, runs.EXIT_TIMEOUT),
        ({"phase": "Cancelled"}, runs.EXIT_CANCELLED),
    ],
)
def test_the_exit_code_of_an_ended_run(status, code):
    assert runs.exit_code({"status": status}) == code


def test_tables_take_the_servers_columns_wide_adds_priority_ones():
    table = {
        "columnDefinitions": [
            {"name": "Name", "priority": 0},
            {"name": "Phase", "priority": 0},
            {"name": "Pod", "priority": 1},
        ],
        "rows": [
            {"cells": ["a", "Running", None], "object": {"metadata": {"namespace": "ci"}}},
            {
                "cells": ["long-name", "Failed", "bash-0"],
                "object": {"metadata": {"namespace": "x"}},
            },
        ],
    }
    narrow = output.table_rows(table, wide=False, namespace_column=False)
    assert narrow == [["NAME", "PHASE"], ["a", "Running"], ["long-name", "Failed"]]
    wide = output.table_rows(table, wide=True, namespace_column=True)
    assert wide[0] == ["NAMESPACE", "NAME", "PHASE", "POD"] and wide[1][3] == "<none>"
    assert output.format_rows(narrow).splitlines() == [
        "NAME        PHASE",
        "a           Running",
        "long-name   Failed",
    ]
    assert (
        output.table_rows({"columnDefinitions": [], "rows": []}, wide=False, namespace_column=False)
        == []
    )


WFR = {
    "spec": {
        "jobs": {
            "ship": {"runs-on": "bash", "needs": ["build"], "steps": [{"name": "go", "run": "x"}]},
            "build": {"runs-on": "bash", "steps": [{"name": "a", "run": "x"}, {"name": "b", "run": "y"}]},
        }
    },
    "status": {
        "jobs": {
            "build": {
                "phase": "Failed",
                "message": "step a failed: exit code 2",
                "steps": [{"name": "a", "phase": "Failed", "runName": "w-build-a"}, {"name": "b", "phase": "Pending"}],
            },
            "ship": {"phase": "Skipped", "message": "job build failed"},
        }
    },
}  # fmt: skip


def test_the_workflow_table_orders_jobs_by_needs_and_shows_skipped_steps_with_why():
    runs_status = {
        "w-build-a": {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:05Z",
                      "message": "exit code 2"},
    }  # fmt: skip
    rows = wftable.rows(WFR, runs_status, now=datetime(2026, 1, 1, 0, 5, tzinfo=UTC))
    assert rows == [
        ["JOB", "STEP", "PHASE", "DURATION", "RUN", "REASON"],
        ["build", "-", "Failed", "1m05s", "-", "step a failed: exit code 2"],
        ["build", "a", "Failed", "1m05s", "w-build-a", "exit code 2"],
        ["build", "b", "Skipped", "-", "-", "an earlier step failed"],
        ["ship", "-", "Skipped", "-", "-", "job build failed"],
        ["ship", "go", "Skipped", "-", "-", "job build failed"],
    ]
    assert wftable.job_progress(WFR) == {"build": "Failed", "ship": "Skipped"}


@pytest.mark.parametrize(
    ("start", "end", "shown"),
    [
        ("00:00:00", "00:00:00", "<1s"),
        ("00:00:00", "00:00:42", "42s"),
        ("00:00:00", "02:03:00", "2h03m"),
    ],
)
def test_durations_are_never_a_misleading_zero(start, end, shown):
    status = {"startTime": f"2026-01-01T{start}Z", "completionTime": f"2026-01-01T{end}Z"}
    wfr = {"spec": {"jobs": {"j": {"steps": [{"name": "s"}]}}},
           "status": {"jobs": {"j": {"phase": "Succeeded", "steps": [{"name": "s", "phase": "Succeeded", "runName": "r"}]}}}}  # fmt: skip
    assert wftable.rows(wfr, {"r": status})[2][3] == shown


def test_krt_loads_neither_django_nor_celery_nor_the_kubernetes_client_to_start():
    probe = (
        "import sys, portal.krt.cli, portal.krt.commands, portal.krt.sdk;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'celery', 'kubernetes', 'rest_framework'}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_phases_are_coloured_only_on_a_terminal(monkeypatch):
    rows = [["NAME", "PHASE"], ["a", "Failed"], ["b", "Succeeded"]]
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    coloured = output.format_rows(rows, Terminal())
    assert f"{output.RED}Failed{output.RESET}" in coloured
    assert f"{output.GREEN}Succeeded{output.RESET}" in coloured
    assert "\033[" not in output.format_rows(rows, io.StringIO())  # a pipe or a file
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033[" not in output.format_rows(rows, Terminal())


def test_a_carried_over_job_says_where_it_succeeded():
    carried = {"phase": "Succeeded", "reason": "CarriedOver", "message": "succeeded in WorkflowRun w1; carried over",
               "steps": [{"name": "a", "phase": "Succeeded", "runName": "w1-build-a"}]}  # fmt: skip
    wfr = {"spec": {"rerunOf": {"name": "w1"}, "jobs": {"build": {"steps": [{"name": "a"}]}}},
           "status": {"jobs": {"build": carried}}}  # fmt: skip
    assert wftable.rows(wfr, {})[1][5] == "succeeded in WorkflowRun w1; carried over"
