"""How a detached runner process begins (the supervisor's, and any engine's that runs an
execution from its directory): parse ``<dir> --lock-fd N [--detach]``, fork away from the
starter, take its own session, keep the inherited lock out of its children, note SIGTERM, and
record its identity in ``supervisor.json`` so cancel can signal it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
from pathlib import Path

from . import procs
from .layout import ExecutionDir, write_atomic


def begin(prog: str, argv: list[str] | None = None) -> tuple[ExecutionDir, list[int]]:
    """(the execution dir, the SIGTERMs received so far: the list grows on each)."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("dir", type=Path)
    parser.add_argument("--lock-fd", type=int, required=True)
    parser.add_argument("--detach", action="store_true", help="fork, so the caller reaps no one")
    args = parser.parse_args(argv)
    if args.detach and os.fork() != 0:
        os._exit(0)
    with contextlib.suppress(OSError):
        os.setsid()  # its own session and group: cancel signals the group
    os.set_inheritable(args.lock_fd, False)  # no child may keep the lock (and look alive)
    directory = ExecutionDir(args.dir)
    terminated: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    write_atomic(directory.supervisor, json.dumps(procs.identity(os.getpid())))
    return directory, terminated
