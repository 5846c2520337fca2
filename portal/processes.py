"""A small foreground supervisor for ``manage.py up``: start child processes, restart one that
dies (with backoff), and stop them all cleanly on Ctrl-C or SIGTERM.

The local Runtime Pods are supervised children too; their ``on_exit`` tells a crash (the pod
comes back as a new one) from the stop of everything (``shutting_down``: the pod is kept for
the next start).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("kruntimes.up")


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # Called before each (re)start; may rewrite argv/env (e.g. a new pod name and UID).
    prepare: Callable[[Child], None] | None = None
    # Called when the child died or was stopped (e.g. remove its RuntimePod row).
    on_exit: Callable[[Child], None] | None = None
    process: subprocess.Popen | None = None
    restarts: int = 0
    next_start: float = 0.0

    def start(self) -> None:
        if self.prepare is not None:
            self.prepare(self)
        log.info("starting %s: %s", self.name, " ".join(self.argv))
        self.process = subprocess.Popen(
            self.argv, env={**os.environ, **self.env}, start_new_session=True
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Supervisor:
    def __init__(
        self, children: list[Child], *, stop_timeout: float = 10.0, max_backoff: float = 30.0
    ) -> None:
        self.children = children
        self.stop_timeout = stop_timeout
        self.max_backoff = max_backoff
        self.stopping = False
        # set once ``stop`` begins: children exiting now were stopped with everything, on
        # purpose, and did not crash (a child's ``on_exit`` reads it)
        self.shutting_down = False

    def _request_stop(self, signum, frame) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        self.stopping = True

    def add(self, child: Child) -> None:
        """Start supervising a new child (e.g. a Runtime Pod for a new Runtime)."""
        self.children.append(child)
        child.start()

    def remove(self, name: str) -> Child | None:
        """Stop one child and forget it."""
        child = next((c for c in self.children if c.name == name), None)
        if child is None:
            return None
        self.children.remove(child)
        self._stop_children([child])
        return child

    def run(
        self,
        *,
        poll: float = 0.5,
        until: Callable[[], bool] | None = None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        """Supervise until stopped; ``tick`` runs every poll (providers sync their pods)."""
        previous = {
            s: signal.signal(s, self._request_stop) for s in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            for child in self.children:
                child.start()
            while not self.stopping and not (until and until()):
                self._restart_dead(time.monotonic())
                if tick is not None:
                    self._tick(tick)
                time.sleep(poll)
        finally:
            self.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _restart_dead(self, now: float) -> None:
        for child in self.children:
            if child.alive():
                continue
            if child.next_start == 0.0:
                code = child.process.returncode if child.process else None
                backoff = min(2**child.restarts, self.max_backoff)
                log.warning("%s exited with %s; restarting in %.0fs", child.name, code, backoff)
                child.next_start = now + backoff
                if child.on_exit is not None:
                    child.on_exit(child)
            elif now >= child.next_start:
                child.restarts += 1
                child.next_start = 0.0
                child.start()

    @staticmethod
    def _tick(tick: Callable[[], None]) -> None:
        try:
            tick()
        except Exception:  # noqa: BLE001 - a failing sync must not take the supervisor down
            log.exception("supervisor tick failed; retrying at the next poll")

    def stop(self) -> None:
        self.shutting_down = True
        self._stop_children(self.children)
        log.info("all processes stopped")

    def _stop_children(self, children: list[Child]) -> None:
        """SIGTERM each child (it shuts its own workers down), wait, then SIGKILL the group."""
        for child in children:
            if child.alive():
                child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for child in children:
            if child.process is None:
                continue
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in time; killing it", child.name)
                os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait()
            if child.on_exit is not None:
                child.on_exit(child)
