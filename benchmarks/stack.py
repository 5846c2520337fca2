"""The processes ``bench runs`` starts: the control worker, the echo worker and local Runtime
Pods, as children of a ``portal.processes.Supervisor`` (stopped together at the end).

Unlike ``manage.py up`` the children write to log files (``<data dir>/bench-runs/logs``): the
bench's stdout carries only its JSON line. Nothing restarts a child that dies: the bench fails
with the child's name and the tail of its log instead.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from portal.processes import Child, Supervisor

log = logging.getLogger("kruntimes.bench")


class StackError(RuntimeError):
    """A child could not start or died."""


@dataclass
class LoggedChild(Child):
    """A ``Child`` whose output goes to its own log file, started in the project directory."""

    log_path: Path | None = None

    def start(self) -> None:
        if self.prepare is not None:
            self.prepare(self)
        assert self.log_path is not None
        log.debug("starting %s: %s", self.name, " ".join(self.argv))
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                env={**os.environ, **self.env},
                cwd=settings.BASE_DIR,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )


def tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


class Stack:
    def __init__(self, log_dir: Path, *, stop_timeout: float = 15.0) -> None:
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        for old in log_dir.glob("*.log"):
            old.unlink()
        self.supervisor = Supervisor([], stop_timeout=stop_timeout)
        self.provider = None

    def _logged(self, name: str, argv: list[str], **hooks) -> LoggedChild:
        filename = name.replace("/", "_").replace(":", "-").replace("#", "-") + ".log"
        return LoggedChild(name, argv, log_path=self.log_dir / filename, **hooks)

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> LoggedChild:
        child = self._logged(name, argv, env=dict(env or {}))
        self.supervisor.add(child)
        return child

    def start_pods(self, namespace: str, runtime: str, replicas: int) -> list[LoggedChild]:
        """``replicas`` local Runtime Pods, registered and unregistered as ``up`` does."""
        from scheduling.providers.local import LocalProvider

        self.provider = self.provider or LocalProvider(self.supervisor)
        pods = []
        for index in range(replicas):
            plain = self.provider.child(namespace, runtime, index)
            child = self._logged(
                plain.name, plain.argv, prepare=plain.prepare, on_exit=plain.on_exit
            )
            self.supervisor.add(child)
            pods.append(child)
        return pods

    def pod_names(self) -> list[str]:
        """The RuntimePod names of the pods started here (current incarnations)."""
        pods = self.provider.pods.values() if self.provider is not None else []
        return [pod.name for pod in pods if pod is not None]

    @property
    def children(self) -> list[Child]:
        return list(self.supervisor.children)

    def check_alive(self) -> None:
        for child in self.children:
            if not child.alive():
                code = child.process.returncode if child.process else None
                where = getattr(child, "log_path", None)
                raise StackError(
                    f"{child.name} exited with {code} (log {where}):\n"
                    f"{tail(where) if where else ''}"
                )

    def logs(self) -> dict[str, Path]:
        return {c.name: c.log_path for c in self.children if getattr(c, "log_path", None)}

    def stop(self) -> float:
        """Pods first, while the control worker still consumes their last messages (a stale
        heartbeat left in the broker would re-create the pod's row in the next run)."""
        started = time.monotonic()
        pods = [c for c in self.children if c.name.startswith("pod:")]
        if pods and any(c.alive() for c in self.children if c.name == "control-worker"):
            # all at once: one after the other (``Supervisor.remove``) takes seconds per pod
            for pod in pods:
                self.supervisor.children.remove(pod)
            self.supervisor._stop_children(pods)
            time.sleep(0.5)
        self.supervisor.stop()
        return time.monotonic() - started
