"""Watching local executions (``jobclasses.localexec``) and the processes they start."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jobclasses.localexec import Observation, observe
from tests.helpers.waiting import wait_until


def finish(ref: dict, timeout: float = 10.0) -> Observation:
    """The execution's final observation; fails the test if it does not finish in time."""
    assert wait_until(lambda: observe(ref).finished, timeout=timeout, interval=0.02), observe(ref)
    return observe(ref)


def wait_step_running(ref: dict, index: int = 0, timeout: float = 10.0) -> None:
    def running() -> bool:
        steps = observe(ref).steps
        return len(steps) > index and steps[index]["status"] == "Running"

    assert wait_until(running, timeout=timeout, interval=0.02), observe(ref)


def wait_file(path: Path, timeout: float = 10.0) -> str:
    assert wait_until(lambda: path.exists() and path.read_text().strip(), timeout, 0.02), path
    return path.read_text().strip()


def _stat(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def pid_alive(pid: int) -> bool:
    """Whether the process runs (a zombie nobody reaped yet counts as dead)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """The live (non-zombie) processes in a process group."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(name))
    return found


def step_groups(ref: dict) -> list[int]:
    """The process groups of the steps started so far (waits for the first)."""
    return [group["pgid"] for group in json.loads(wait_file(Path(ref["dir"]) / "groups.json"))]


def supervisor_pid(ref: dict) -> int:
    return json.loads((Path(ref["dir"]) / "supervisor.json").read_text())["pid"]
