"""Everything a step started dies with it, including what left its process group.

A step may ``setsid`` or double-fork a daemon out of its process group, where killing the group
misses it. runtimed is a child subreaper, so such an orphan is re-parented into runtimed's own
process subtree rather than to PID 1; and each step runs with ``KRUNTIME_STEP_ID`` in its
environment, which every descendant inherits. At the end of a step (success, failure, timeout
or cancel) :func:`kill_step` kills every process of runtimed's subtree that carries the step's
id, or that descends from a process seen in the step's tree while it ran (a watcher records
them, for processes that drop their environment), and reaps them.

What remains possible: a process that clears its environment and leaves the tree within one
watcher interval. A cgroup per step closes that too, where the pod may create one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import TypeGuard

log = logging.getLogger("runtimed.proctree")

STEP_ID_VARIABLE = "KRUNTIME_STEP_ID"
WATCH_INTERVAL_SECONDS = 0.05
KILL_ROUNDS = 100
_PROC = "/proc"


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    start: int  # start time in clock ticks: tells a pid apart from a later reuse


def read_proc(pid: int) -> Proc | None:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    # the command name is in parentheses and may itself contain ") "
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return Proc(pid, int(fields[1]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def processes() -> dict[int, Proc]:
    found = {}
    try:
        names = os.listdir(_PROC)
    except OSError:  # no /proc (not Linux): only the process group is killed
        return {}
    for name in names:
        if name.isdigit():
            proc = read_proc(int(name))
            if proc is not None:
                found[proc.pid] = proc
    return found


def subtree(procs: dict[int, Proc], root: int) -> set[int]:
    """``root``'s descendants (not ``root`` itself)."""
    children: dict[int, list[int]] = {}
    for proc in procs.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: set[int] = set()
    pending = list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.add(pid)
            pending.extend(children.get(pid, ()))
    return found


def environ(pid: int) -> list[bytes] | None:
    """The process's environment as ``NAME=value`` entries; None when it cannot be read."""
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:
        return None


def step_of(entries: list[bytes] | None) -> TypeGuard[list[bytes]]:
    """Whether an environment is a step's (it carries any step id)."""
    prefix = f"{STEP_ID_VARIABLE}=".encode()
    return entries is not None and any(item.startswith(prefix) for item in entries)


def carries(pid: int, step_id: str) -> bool:
    """Whether the process's environment names this step."""
    return f"{STEP_ID_VARIABLE}={step_id}".encode() in (environ(pid) or [])


@dataclass
class StepTree:
    """One step's processes: the leader, and whatever the watcher saw below it."""

    step_id: str
    leader: int
    seen: dict[int, int] = field(default_factory=dict)  # pid -> start time
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def watch(self, interval: float = WATCH_INTERVAL_SECONDS) -> None:
        """Record the step's descendants while it runs (in a daemon thread)."""

        def loop() -> None:
            while not self._stop.wait(interval):
                self.record(processes())

        self._thread = threading.Thread(target=loop, name=f"proctree-{self.leader}", daemon=True)
        self._thread.start()

    def record(self, procs: dict[int, Proc]) -> None:
        for pid in subtree(procs, self.leader) | self._known_alive(procs):
            self.seen.setdefault(pid, procs[pid].start)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)

    def _known_alive(self, procs: dict[int, Proc]) -> set[int]:
        """Seen pids still alive as the same process, and their descendants."""
        alive = {
            pid for pid, start in self.seen.items() if pid in procs and procs[pid].start == start
        }
        for pid in list(alive):
            alive |= subtree(procs, pid)
        return alive

    def members(self, procs: dict[int, Proc], root: int) -> set[int]:
        """The step's processes now: in ``root``'s subtree and carrying the step's id, or
        seen in the step's tree, or descending from either."""
        below = subtree(procs, root)
        marked = {pid for pid in below if carries(pid, self.step_id)}
        found = set(marked) | (self._known_alive(procs) & below)
        if self.leader in procs:
            found |= {self.leader} | subtree(procs, self.leader)
        for pid in list(found):
            found |= subtree(procs, pid)
        found.discard(root)
        return found


def kill_step(tree: StepTree, root: int | None = None) -> int:
    """SIGKILL every process of the step below ``root`` (runtimed) until none is left; reap
    those that are runtimed's children. Returns how many were killed."""
    tree.stop()
    root = os.getpid() if root is None else root
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        procs = processes()
        targets = tree.members(procs, root) - {os.getpid()}
        # zombies already dead are only reaped
        targets = {pid for pid in targets if not _reap(pid)}
        if not targets:
            break
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.01)
        for pid in targets:
            _reap(pid)
    else:
        log.warning(
            "step %s: processes still alive after %d kill rounds", tree.step_id, KILL_ROUNDS
        )
    if killed:
        log.info("step %s: killed %d process(es) it left behind", tree.step_id, len(killed))
    return len(killed)


def kill_marked(root: int | None = None) -> int:
    """SIGKILL every process below ``root`` that carries any step id (runtimed's exit)."""
    root = os.getpid() if root is None else root
    killed = []
    for pid in subtree(processes(), root):
        if step_of(environ(pid)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    count, deadline = len(killed), time.monotonic() + 1.0
    while killed and time.monotonic() < deadline:  # reap those that are (or become) ours
        killed = [pid for pid in killed if not _reap(pid)]
        time.sleep(0.01)
    return count


def _pod_processes(pod_uid: str) -> list[tuple[int, list[bytes]]]:
    """Every process on this machine (but this one) started for the pod ``pod_uid``, with its
    environment: the pod's runtimed and its steps carry ``KRUNTIME_POD_UID`` (a pod's name is
    not enough: a restarted local pod, as a StatefulSet's, keeps it, and so may another
    installation's)."""
    mark = f"KRUNTIME_POD_UID={pod_uid}".encode()
    found = []
    for pid in processes():
        entries = environ(pid)
        if pid != os.getpid() and entries is not None and mark in entries:
            found.append((pid, entries))
    return found


def kill_pod_leftovers(pod_uid: str) -> int:
    """SIGKILL every process on this machine left by a step of the pod ``pod_uid`` (its
    runtimed is dead, so nothing is in its subtree any more): for the pod's provider. A step's
    processes carry both ``KRUNTIME_STEP_ID`` and ``KRUNTIME_POD_UID``."""
    count = 0
    for pid, entries in _pod_processes(pod_uid):
        if step_of(entries):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                count += 1  # not reaped here: whoever is its parent does
    return count


def pod_daemons(pod_uid: str) -> list[int]:
    """The pod's own processes still alive (not its steps): a runtimed left running by a
    supervisor that was killed (``kill -9`` of ``manage.py up``), for the next one to drain."""
    return sorted(
        pid
        for pid, entries in _pod_processes(pod_uid)
        if not step_of(entries) and not _is_zombie(pid)
    )


def _reap(pid: int) -> bool:
    """Collect ``pid`` if it is our exited child; True when it is gone for good."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child (or already reaped)
        return read_proc(pid) is None or _is_zombie(pid)
    return done == pid


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[:1] == ["Z"]
