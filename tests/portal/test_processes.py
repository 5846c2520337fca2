"""The ``manage.py up`` supervisor: restarts a dead child, stops every child cleanly."""

from __future__ import annotations

import sys
import time

from portal.processes import Child, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_stop_terminates_every_child_and_its_group():
    children = [Child("a", SLEEPER), Child("b", [*SLEEPER])]
    supervisor = Supervisor(children, stop_timeout=5)
    for child in children:
        child.start()
    supervisor.stop()
    assert all(c.process.returncode is not None for c in children)


def test_dead_child_is_restarted_with_backoff():
    starts = []
    crasher = Child(
        "crasher",
        [sys.executable, "-c", "raise SystemExit(3)"],
        prepare=lambda c: starts.append(time.monotonic()),
    )
    supervisor = Supervisor([crasher], stop_timeout=5, max_backoff=0.1)
    deadline = time.monotonic() + 10
    supervisor.run(poll=0.02, until=lambda: len(starts) >= 3 or time.monotonic() > deadline)
    assert len(starts) >= 3
    assert crasher.restarts >= 2


def test_prepare_runs_before_each_start_so_a_restart_can_be_a_new_pod():
    names = iter(["pod-1", "pod-2"])
    seen = []

    def new_identity(child: Child) -> None:
        child.env["POD_NAME"] = next(names)
        seen.append(child.env["POD_NAME"])

    child = Child("pod", [sys.executable, "-c", "pass"], prepare=new_identity)
    supervisor = Supervisor([child], stop_timeout=5, max_backoff=0.01)
    deadline = time.monotonic() + 10
    supervisor.run(poll=0.02, until=lambda: len(seen) >= 2 or time.monotonic() > deadline)
    assert seen == ["pod-1", "pod-2"]


def test_on_exit_tells_a_crash_from_the_stop_of_everything():
    """A child that died while the rest runs is a crash (its pod comes back as a new one); one
    stopped by ``stop`` exited on purpose (its pod is kept for the next start)."""
    seen = []

    def record(child: Child) -> None:
        seen.append((child.name, supervisor.shutting_down))

    crasher = Child("crasher", [sys.executable, "-c", "raise SystemExit(3)"], on_exit=record)
    sleeper = Child("sleeper", SLEEPER, on_exit=record)
    supervisor = Supervisor([crasher, sleeper], stop_timeout=5, max_backoff=60)
    deadline = time.monotonic() + 10
    supervisor.run(poll=0.02, until=lambda: bool(seen) or time.monotonic() > deadline)
    assert seen[0] == ("crasher", False)
    assert ("sleeper", True) in seen[1:]
