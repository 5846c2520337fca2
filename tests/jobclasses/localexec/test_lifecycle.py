"""An execution's life across controller restarts: idempotent start, timeout, cancel, a killed
supervisor, delete, and the count of live executions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jobclasses.localexec import (
    ExecutionSpec,
    Step,
    cancel,
    delete,
    observe,
    running_count,
    start,
)
from jobclasses.localexec.client import _claim
from jobclasses.localexec.layout import ExecutionDir
from jobclasses.localexec.spec import to_json
from tests.helpers.localexec import (
    finish,
    group_members,
    pid_alive,
    step_groups,
    supervisor_pid,
    wait_file,
    wait_step_running,
)
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.processes

REPO = Path(__file__).resolve().parents[3]
# a step whose background child ignores SIGTERM: only the SIGKILL after the grace ends it
STUBBORN = "sh -c 'trap \"\" TERM; exec sleep 30' & echo $! > child.pid; sleep 30"


def spec(*steps: Step, timeout: int | None = None) -> ExecutionSpec:
    return ExecutionSpec(steps=steps, env={}, timeout_seconds=timeout, files={})


def work(ref: dict) -> Path:
    return Path(ref["dir"]) / "work"


def assert_all_gone(ref: dict, *pids: int) -> None:
    assert wait_until(lambda: not any(group_members(g) for g in step_groups(ref)), 5, 0.02)
    assert not any(pid_alive(pid) for pid in pids)


def test_the_overall_timeout_kills_the_step_group_and_times_out(root: Path):
    steps = (Step("slow", STUBBORN), Step("never", "touch ran"))
    ref = start(root, "timeout", spec(*steps, timeout=1), kill_grace_seconds=0.3)
    child = int(wait_file(work(ref) / "child.pid"))

    seen = finish(ref)
    assert seen.phase == "TimedOut" and "timeout" in seen.message
    assert [s["status"] for s in seen.steps] == ["Failed", "Skipped"]
    assert_all_gone(ref, child)


def test_cancel_while_running_kills_the_group_and_records_cancelled(root: Path):
    ref = start(
        root, "cancel", spec(Step("slow", STUBBORN), Step("next", "true")), kill_grace_seconds=0.3
    )
    child = int(wait_file(work(ref) / "child.pid"))

    cancel(ref, "the user asked")
    seen = finish(ref)
    assert (seen.phase, seen.message) == ("Cancelled", "the user asked")
    assert [s["status"] for s in seen.steps] == ["Cancelled", "Skipped"]
    assert_all_gone(ref, child)
    assert wait_until(lambda: not pid_alive(supervisor_pid(ref)), 5, 0.02)  # it exits after
    cancel(ref)  # idempotent, and a no-op on a finished execution
    assert observe(ref).phase == "Cancelled"


def test_what_a_successful_step_left_running_dies_with_the_execution(root: Path):
    ref = start(
        root,
        "leftover",
        spec(Step("daemon", "sleep 30 & echo $! > bg.pid")),
        kill_grace_seconds=0.3,
    )

    assert finish(ref).phase == "Succeeded"
    assert_all_gone(ref, int((work(ref) / "bg.pid").read_text()))


def test_start_twice_returns_the_same_ref_and_starts_nothing(root: Path):
    first = start(root, "twice", spec(Step("count", "echo ran >> runs")))
    finish(first)
    second = start(root, "twice", spec(Step("other", "echo other >> runs")))

    assert second == first
    assert finish(second).phase == "Succeeded"
    assert (work(first) / "runs").read_text() == "ran\n"


def test_concurrent_starts_from_threads_start_one_supervisor(root: Path):
    barrier = threading.Barrier(8)
    refs: list[dict] = []

    def race() -> None:
        barrier.wait()
        refs.append(start(root, "threads", spec(Step("count", "echo ran >> runs"))))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(refs) == 8 and all(ref == refs[0] for ref in refs)
    assert finish(refs[0]).phase == "Succeeded"
    assert (work(refs[0]) / "runs").read_text() == "ran\n"
    assert [p.name for p in root.iterdir()] == ["threads"]  # no claim left behind


def run_python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


START = """
import json, sys
from pathlib import Path
from jobclasses.localexec import ExecutionSpec, Step, start
spec = ExecutionSpec(steps=(Step("count", "echo ran >> runs"),), env={}, timeout_seconds=None, files={})
print(json.dumps(start(Path(sys.argv[1]), "procs", spec)))
"""

OBSERVE = """
import dataclasses, json, sys
from jobclasses.localexec import observe
print(json.dumps(dataclasses.asdict(observe(json.loads(sys.argv[1])))))
"""


def test_concurrent_starts_from_processes_start_one_supervisor(root: Path):
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", START, str(root)], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    refs = [json.loads(starter.communicate(timeout=30)[0]) for starter in starters]

    assert all(ref == refs[0] for ref in refs)
    assert finish(refs[0]).phase == "Succeeded"
    assert (work(refs[0]) / "runs").read_text() == "ran\n"


def test_a_restarted_caller_observes_by_the_ref_alone(root: Path):
    ref = json.loads(
        json.dumps(
            start(root, "restart", spec(Step("wait", "while [ ! -e go ]; do sleep 0.02; done")))
        )
    )
    wait_step_running(ref)

    assert json.loads(run_python(OBSERVE, json.dumps(ref)))["phase"] == "Running"
    (work(ref) / "go").touch()
    finish(ref)
    seen = json.loads(run_python(OBSERVE, json.dumps(ref)))
    assert (seen["phase"], seen["finished"]) == ("Succeeded", True)
    assert seen["steps"][0]["exitCode"] == 0


def test_a_sigkilled_supervisor_is_unknown_and_never_rerun(root: Path):
    ref = start(
        root,
        "killed",
        spec(Step("slow", "sleep 30 & echo $! > bg.pid; sleep 30"), Step("next", "true")),
    )
    background = int(wait_file(work(ref) / "bg.pid"))
    supervisor = supervisor_pid(ref)
    (leader,) = step_groups(ref)

    os.kill(supervisor, signal.SIGKILL)
    assert wait_until(lambda: observe(ref).phase == "Unknown", 5, 0.02), observe(ref)
    seen = observe(ref)
    assert not seen.finished and "without recording a final result" in seen.message
    assert seen.steps[0]["status"] == "Running"  # the last word the supervisor recorded
    assert wait_until(lambda: not pid_alive(leader), 5, 0.02)  # the leader died with it

    assert start(root, "killed", spec(Step("slow", "true"))) == ref
    assert supervisor_pid(ref) == supervisor and observe(ref).phase == "Unknown"
    assert running_count(root) == 0

    cancel(ref)  # the supervisor is gone, so cancel kills what its step left
    assert_all_gone(ref, background)
    assert observe(ref).phase == "Unknown"


def test_a_claim_whose_starter_died_before_spawning_ran_nothing_and_start_resumes_it(root: Path):
    root.mkdir()
    directory = ExecutionDir(root / "orphan")
    the_spec = spec(Step("count", "echo ran >> runs"))
    os.close(_claim(root, directory, to_json(the_spec, kill_grace_seconds=0.3)))  # then "crash"
    ref = {"type": "local", "dir": str(directory.path), "id": "orphan"}

    seen = observe(ref)
    assert seen.phase == "Unknown" and "no step has run" in seen.message
    assert start(root, "orphan", the_spec) == ref
    assert finish(ref).phase == "Succeeded"
    assert (work(ref) / "runs").read_text() == "ran\n"


def test_cancelling_a_claim_that_never_started_keeps_start_from_running_it(root: Path):
    root.mkdir()
    directory = ExecutionDir(root / "never")
    the_spec = spec(Step("count", "echo ran >> runs"))
    os.close(_claim(root, directory, to_json(the_spec, kill_grace_seconds=0.3)))
    ref = {"type": "local", "dir": str(directory.path), "id": "never"}

    cancel(ref, "no longer wanted")
    start(root, "never", the_spec)
    seen = observe(ref)
    assert (seen.phase, seen.message) == ("Cancelled", "no longer wanted")
    assert [s["status"] for s in seen.steps] == ["Skipped"]
    assert not (work(ref) / "runs").exists()


def test_delete_stops_a_running_execution_and_removes_its_dir(root: Path):
    ref = start(root, "delete", spec(Step("slow", STUBBORN)), kill_grace_seconds=0.3)
    child = int(wait_file(work(ref) / "child.pid"))
    groups = step_groups(ref)
    supervisor = supervisor_pid(ref)

    delete(ref)
    assert not Path(ref["dir"]).exists()
    assert not any(group_members(g) for g in groups)
    assert not pid_alive(child)
    assert wait_until(lambda: not pid_alive(supervisor), 5, 0.02)
    seen = observe(ref)
    assert seen.phase == "Unknown" and "deleted" in seen.message and not seen.finished
    delete(ref)  # a missing dir is fine
    cancel(ref)


def test_delete_removes_a_finished_execution(root: Path):
    ref = start(root, "done", spec(Step("s", "true")))
    finish(ref)

    delete(ref)
    assert not Path(ref["dir"]).exists()


def test_running_count_counts_live_supervisors_only(root: Path):
    assert running_count(root) == 0  # no root yet
    hold = "while [ ! -e go ]; do sleep 0.02; done"
    a = start(root, "a", spec(Step("hold", hold)))
    b = start(root, "b", spec(Step("hold", hold)))
    finish(start(root, "c", spec(Step("quick", "true"))))
    wait_step_running(a)
    wait_step_running(b)

    assert running_count(root) == 2
    (work(a) / "go").touch()
    finish(a)
    assert wait_until(lambda: running_count(root) == 1, 5, 0.02)  # a's supervisor exits
    cancel(b)
    finish(b)
    assert wait_until(lambda: running_count(root) == 0, 5, 0.02)


@pytest.mark.parametrize("ref", [{}, {"type": "kubernetes", "dir": "/tmp"}, {"type": "local"}])
def test_a_ref_of_another_kind_is_refused(ref: dict):
    with pytest.raises(ValueError):
        observe(ref)


def test_sigterm_to_the_supervisor_alone_cancels_the_execution(root: Path):
    ref = start(root, "sigterm", spec(Step("slow", "sleep 30"), Step("next", "true")))
    wait_step_running(ref)

    os.killpg(supervisor_pid(ref), signal.SIGTERM)  # what a stop of the whole host sends
    seen = finish(ref)
    assert seen.phase == "Cancelled" and "SIGTERM" in seen.message
    assert [s["status"] for s in seen.steps] == ["Cancelled", "Skipped"]
    assert_all_gone(ref)
