"""Running a step: outcome, clean environment, arguments, working dir, timeout, no orphans."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from runtimed.execute import Step, identity_env, run_step, step_env, working_directory
from runtimed.staging import PrepareError
from tests.helpers.waiting import wait_until


def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.sh"
    path.write_text(text)
    return path


def step(tmp_path, text, *, args=(), env=None, cwd=None, timeout=None) -> Step:
    return Step(
        ("bash", str(script(tmp_path, text)), *args),
        cwd or tmp_path,
        env or {},
        tmp_path / "attempt-1.log",
        timeout,
    )


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def wait_for_file(path: Path, within: float = 5.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def test_exit_zero_succeeds_and_output_goes_to_the_log(tmp_path, clock):
    result = run_step(step(tmp_path, "echo out; echo err >&2\n"), clock=clock)
    assert (result.phase, result.reason, result.exit_code) == ("Succeeded", "", 0)
    assert result.start < result.end
    assert (tmp_path / "attempt-1.log").read_text().splitlines() == ["out", "err"]


def test_non_zero_exit_fails_with_the_exit_code(tmp_path, clock):
    result = run_step(step(tmp_path, "exit 3\n"), clock=clock)
    assert (result.phase, result.reason, result.exit_code) == ("Failed", "RuntimeExecute", 3)
    assert "exit code 3" in result.message


def test_step_killed_by_a_signal_reports_it(tmp_path, clock):
    result = run_step(step(tmp_path, "kill -KILL $$\n"), clock=clock)
    assert (result.phase, result.exit_code) == ("Failed", 137)
    assert "SIGKILL" in result.message


def test_environment_is_only_the_run_env_and_kruntime_vars(tmp_path, clock, monkeypatch):
    monkeypatch.setenv("RUNTIMED_TEST_SECRET", "leaked")
    identity = identity_env(
        run_name="build",
        run_namespace="ci",
        run_uid="u1",
        attempt=2,
        pod_name="pod-a",
        pod_uid="p1",
        workspace=tmp_path,
        run_dir=tmp_path / "run",
    )
    env = step_env(
        [("GREETING", "hello world"), ("EMPTY", ""), ("KRUNTIME_RUN_UID", "spoofed")], identity
    )
    dump = tmp_path / "env.txt"
    result = run_step(step(tmp_path, f"declare -px > {dump}\n", env=env), clock=clock)
    assert result.phase == "Succeeded"
    seen = exported(dump.read_text())
    step_id = seen.pop("KRUNTIME_STEP_ID")  # marks everything the step starts (proctree)
    assert len(step_id) == 32 and int(step_id, 16) >= 0
    expected = {"GREETING": "hello world", "EMPTY": "", **identity}
    assert {k: v for k, v in seen.items() if k not in BASH_OWN} == expected
    assert seen["KRUNTIME_RUN_UID"] == "u1"  # runtimed's identity wins
    assert seen["KRUNTIME_POD_UID"] == "p1"  # what the provider finds a dead pod's steps by
    assert "RUNTIMED_TEST_SECRET" not in seen
    assert not any(name.startswith("CELERY_") for name in seen)


# variables bash itself exports into a bare environment
BASH_OWN = {"PWD", "SHLVL", "OLDPWD", "_"}


def exported(text: str) -> dict[str, str]:
    """Parse ``declare -px`` output into {name: value} (values via bash's own quoting)."""
    import shlex

    values = {}
    for line in text.splitlines():
        parts = shlex.split(line)
        if len(parts) >= 3 and parts[0] == "declare":
            name, _, value = parts[2].partition("=")
            values[name] = value
    return values


def test_path_is_not_inherited_but_bash_finds_commands(tmp_path, clock, monkeypatch):
    monkeypatch.setenv("PATH", "/runtimed-sentinel:" + os.environ.get("PATH", ""))
    out = tmp_path / "path.txt"
    result = run_step(step(tmp_path, f'printf %s "$PATH" > {out}; ls / >/dev/null\n'), clock=clock)
    assert result.phase == "Succeeded"  # ls was found through bash's default PATH
    assert "runtimed-sentinel" not in out.read_text()


def test_args_are_passed_verbatim(tmp_path, clock):
    args = ["plain", "with space", 'it\'s "quoted"', "$HOME", "*", "", "-x"]
    out = tmp_path / "args.txt"
    result = run_step(
        step(tmp_path, f'for a in "$@"; do printf "%s\\0" "$a"; done > {out}\n', args=args),
        clock=clock,
    )
    assert result.phase == "Succeeded"
    assert out.read_text().split("\0")[:-1] == args


def test_working_directory(tmp_path, clock, workspace):
    cwd = working_directory(workspace, "build/sub")
    assert cwd == workspace / "build" / "sub" and cwd.is_dir()
    out = tmp_path / "pwd.txt"
    run_step(step(tmp_path, f"pwd > {out}\n", cwd=cwd), clock=clock)
    assert out.read_text().strip() == str(cwd)
    assert working_directory(workspace, None) == workspace


@pytest.mark.parametrize("bad", ["../up", "/abs", "a/../../up", "link"])
def test_working_directory_must_stay_in_the_workspace(workspace, tmp_path, bad):
    os.symlink(tmp_path, workspace / "link")
    with pytest.raises(PrepareError, match="workingDir"):
        working_directory(workspace, bad)


def test_timeout_kills_the_whole_group_and_leaves_no_orphan(tmp_path, clock):
    pidfile = tmp_path / "child.pid"
    text = f"sleep 1000 & echo $! > {pidfile}\nsleep 1000\n"
    started = time.monotonic()
    result = run_step(step(tmp_path, text, timeout=1.0), clock=clock, grace=1.0)
    assert time.monotonic() - started < 10
    assert (result.phase, result.reason, result.exit_code) == ("Timeout", "Timeout", None)
    assert "1s" in result.message
    pid = int(wait_for_file(pidfile))
    assert gone(pid), "the backgrounded child survived the timeout"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path, clock):
    pidfile = tmp_path / "child.pid"
    text = f"(trap '' TERM; sleep 1000) & echo $! > {pidfile}\ntrap '' TERM\nsleep 1000\n"
    result = run_step(step(tmp_path, text, timeout=0.5), clock=clock, grace=0.5)
    assert result.phase == "Timeout"
    pid = int(wait_for_file(pidfile))
    assert gone(pid)


def test_a_finished_step_leaves_no_background_process(tmp_path, clock):
    pidfile = tmp_path / "child.pid"
    text = f"sleep 1000 & echo $! > {pidfile}\nexit 0\n"
    started = time.monotonic()
    result = run_step(step(tmp_path, text), clock=clock, grace=1.0)
    assert result.phase == "Succeeded"
    assert time.monotonic() - started < 10  # the orphan holding stdout did not block us
    pid = int(wait_for_file(pidfile))
    assert gone(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_steps_still_running_are_killed_when_runtimed_exits(tmp_path, clock):
    import threading

    from runtimed import procgroup

    results = []
    pidfile = tmp_path / "child.pid"
    worker = threading.Thread(
        target=lambda: results.append(
            run_step(
                step(tmp_path, f"sleep 1000 & echo $! > {pidfile}\nwait\n"), clock=clock, grace=0.5
            )
        )
    )
    worker.start()
    pid = int(wait_for_file(pidfile))
    procgroup.kill_live_groups()  # what runtimed's atexit hook does
    worker.join(10)
    assert results and results[0].phase == "Failed" and "SIGKILL" in results[0].message
    assert gone(pid)


def _pids(path: Path, count: int, within: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists():
            pids = [int(line) for line in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.02)
    raise AssertionError(f"{path} never listed {count} pids")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


ESCAPES = {
    # 20 sessions of their own: killing the step's process group misses every one
    "setsid-20": ("for i in $(seq 20); do setsid sleep 1000 & echo $! >> {pids}; done\n", 20),
    # a double-forked daemon in a new session, re-parented to runtimed when its parent exits
    "double-fork": ("setsid bash -c 'sleep 1000 & echo $! >> {pids}' &\nwait\n", 1),
    "nohup-disown": ("nohup setsid sleep 1000 >/dev/null 2>&1 & echo $! >> {pids}\ndisown\n", 1),
    # a process that also drops the environment: the watcher saw it in the step's tree
    "env-cleared": ("setsid env -i sleep 1000 & echo $! >> {pids}\nsleep 0.3\n", 1),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
@pytest.mark.parametrize("ending", ["success", "failure", "timeout"])
def test_processes_that_left_the_group_die_with_the_step(tmp_path, clock, name, ending):
    pidfile = tmp_path / "pids"
    text, count = ESCAPES[name]
    text = text.format(pids=pidfile)
    text += {"success": "exit 0\n", "failure": "exit 3\n", "timeout": "sleep 1000\n"}[ending]
    result = run_step(
        # the 20 sessions need a moment to start before the timeout; the others start at once
        step(tmp_path, text, timeout=(2.0 if count > 1 else 1.0) if ending == "timeout" else None),
        clock=clock,
        grace=0.5,
    )
    assert (
        result.phase == {"success": "Succeeded", "failure": "Failed", "timeout": "Timeout"}[ending]
    )
    pids = _pids(pidfile, count)
    survivors = [pid for pid in pids if _alive(pid)]
    assert survivors == [], f"{len(survivors)} of {len(pids)} processes outlived the step"


def test_a_cancelled_step_leaves_no_escaped_process(tmp_path, clock):
    import threading

    from runtimed.execute import StepControl

    pidfile = tmp_path / "pids"
    control = StepControl()
    text = f"for i in $(seq 5); do setsid sleep 1000 & echo $! >> {pidfile}; done\nsleep 1000\n"
    the_step = Step(
        ("bash", str(script(tmp_path, text))),
        tmp_path,
        {},
        tmp_path / "a.log",
        None,
        control=control,
    )
    results = []
    worker = threading.Thread(
        target=lambda: results.append(run_step(the_step, clock=clock, grace=0.5))
    )
    worker.start()
    pids = _pids(pidfile, 5)
    control.cancel(0.5)
    worker.join(10)
    assert results[0].phase == "Cancelled"
    assert [pid for pid in pids if _alive(pid)] == []


def test_one_step_ending_leaves_another_steps_processes_alone(tmp_path, clock):
    import threading

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    long_pids, short_pids = first / "pids", second / "pids"
    results = []
    worker = threading.Thread(
        target=lambda: results.append(
            run_step(
                step(first, f"setsid sleep 1000 & echo $! >> {long_pids}\nsleep 3\n"),
                clock=clock,
                grace=0.5,
            )
        )
    )
    worker.start()
    (long_pid,) = _pids(long_pids, 1)
    done = run_step(
        step(second, f"setsid sleep 1000 & echo $! >> {short_pids}\n"), clock=clock, grace=0.5
    )
    (short_pid,) = _pids(short_pids, 1)
    assert done.phase == "Succeeded" and not _alive(short_pid)
    assert _alive(long_pid)  # still the first step's, which is still running
    worker.join(10)
    assert results[0].phase == "Succeeded" and not _alive(long_pid)


def test_runtimed_exit_kills_what_any_step_left_outside_its_group(tmp_path, clock):
    import threading

    from runtimed import procgroup

    pidfile = tmp_path / "pids"
    worker = threading.Thread(
        target=lambda: run_step(
            step(tmp_path, f"setsid sleep 1000 & echo $! >> {pidfile}\nsleep 1000\n"),
            clock=clock,
            grace=0.5,
        )
    )
    worker.start()
    (pid,) = _pids(pidfile, 1)
    procgroup.kill_live_groups()
    worker.join(10)
    assert not worker.is_alive()
    assert not _alive(pid)


def test_a_dead_runtimeds_escaped_processes_are_found_by_pod_uid():
    """By UID, not name: another pod of the same name (a restarted local pod's next
    incarnation keeps its UID, but another installation's ``bash-0`` does not) is left alone."""
    import subprocess

    from runtimed import proctree

    env = {
        "KRUNTIME_POD_NAME": "pod-zz",
        "KRUNTIME_POD_UID": "uid-zz",
        "KRUNTIME_STEP_ID": "abc",
        "PATH": "/usr/bin:/bin",
    }
    other = {**env, "KRUNTIME_POD_UID": "uid-other"}  # same name, another pod
    daemon = {k: v for k, v in env.items() if k != "KRUNTIME_STEP_ID"}  # its runtimed
    mine = subprocess.Popen(["sleep", "1000"], env=env, start_new_session=True)
    theirs = subprocess.Popen(["sleep", "1000"], env=other, start_new_session=True)
    runtimed = subprocess.Popen(["sleep", "1000"], env=daemon, start_new_session=True)
    try:
        assert wait_until(lambda: proctree.pod_daemons("uid-zz") == [runtimed.pid], timeout=5)
        assert wait_until(lambda: len(proctree._pod_processes("uid-zz")) == 2, timeout=5)
        assert proctree.kill_pod_leftovers("uid-zz") == 1
        assert mine.wait(5) == -9
        assert theirs.poll() is None and runtimed.poll() is None
    finally:
        for process in (theirs, runtimed):
            process.kill()
            process.wait()
