"""The ``runtimed.execute_run`` task: execute a dispatched Run once per (uid, attempt).

Idempotency lives on disk, next to the Run: ``attempt-<n>.started`` is created with ``O_EXCL``
before anything runs, and ``attempt-<n>.result.json`` keeps the final report. A duplicate
delivery never executes again; if the attempt already finished it re-sends the recorded report,
so a lost report heals. A runtimed that died mid-Run leaves a marker without a result: the Run
is not executed again (the control plane fails it ExecutionLost).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from celery import Celery

from . import execute
from .config import PodConfig
from .execute import FAILED, Clock, Result, Step, identity_env, step_env, utc_now
from .payload import PayloadError, RunRef, parse, parse_run_ref
from .reporting import Reporter, run_report
from .staging import GIT_TIMEOUT_SECONDS, PrepareError, ensure_run_dir, stage

log = logging.getLogger("runtimed.tasks")

EXECUTE_RUN_TASK = "runtimed.execute_run"
RUNNING = "Running"


class ActiveRuns:
    """The (uid, attempt) pairs executing in this process, for the heartbeat."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[tuple[str, int]] = set()

    def add(self, key: tuple[str, int]) -> None:
        with self._lock:
            self._keys.add(key)

    def discard(self, key: tuple[str, int]) -> None:
        with self._lock:
            self._keys.discard(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys

    def snapshot(self) -> list[dict]:
        with self._lock:
            return [{"uid": uid, "attempt": attempt} for uid, attempt in sorted(self._keys)]


def claim(marker: Path) -> bool:
    """Atomically mark an attempt as started; False if something already did."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{os.getpid()}\n")
    return True


def read_result(path: Path) -> dict | None:
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None
    return recorded if isinstance(recorded, dict) else None


def write_result(path: Path, report: dict) -> None:
    """Keep the final report, atomically (a reader never sees half a file)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(report, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


class RunService:
    """Executes Runs for one pod; the Celery task is a thin wrapper around :meth:`execute_run`."""

    def __init__(self, config: PodConfig, reporter: Reporter, *, clock: Clock = utc_now,
                 active: ActiveRuns | None = None, grace: float | None = None,
                 git_timeout: float = GIT_TIMEOUT_SECONDS) -> None:
        self.config = config
        self.reporter = reporter
        self.clock = clock
        self.active = active if active is not None else ActiveRuns()
        self.grace = grace
        self.git_timeout = git_timeout

    def execute_run(self, payload: Any) -> dict | None:
        """Handle one delivery; returns the final report, or None when nothing was done."""
        try:
            ref = parse_run_ref(payload)
        except PayloadError as exc:
            log.error("dropping a dispatch that names no valid Run: %s", exc)
            return None
        if not self._for_this_pod(ref, payload):
            return None
        try:
            directory = ensure_run_dir(self.config.workspace, ref.uid)
            claimed = claim(directory / f"attempt-{ref.attempt}.started")
        except (OSError, PrepareError) as exc:  # the workspace itself is broken
            log.error("Run %s attempt %s cannot start: %s", ref.uid, ref.attempt, exc)
            now = self.clock()
            final = self._report(ref, FAILED, "RuntimeError", f"runtimed cannot start the Run: "
                                 f"{exc}", None, now, now)
            self.reporter.report_run(final)
            return final
        if not claimed:
            return self._duplicate(ref, directory)
        return self._run_claimed(ref, payload, directory)

    def _for_this_pod(self, ref: RunRef, payload: dict) -> bool:
        pod = payload.get("pod") if isinstance(payload.get("pod"), dict) else {}
        name, uid = pod.get("name"), pod.get("uid")
        if name in (None, self.config.pod_name) and uid in (None, self.config.pod_uid):
            return True
        log.warning("Run %s/%s attempt %s was dispatched to pod %s (uid %s), not to this pod "
                    "%s (uid %s); ignoring it", ref.namespace, ref.name, ref.attempt, name, uid,
                    self.config.pod_name, self.config.pod_uid)
        return False

    def _duplicate(self, ref: RunRef, directory: Path) -> dict | None:
        recorded = read_result(directory / f"attempt-{ref.attempt}.result.json")
        if recorded is not None:
            log.info("Run %s attempt %s already finished; re-sending its report", ref.uid,
                     ref.attempt)
            self.reporter.report_run(recorded)
            return recorded
        if ref.key in self.active:
            log.info("Run %s attempt %s is already running; duplicate ignored", ref.uid,
                     ref.attempt)
        else:
            log.warning("Run %s attempt %s was started before and never finished (runtimed "
                        "restarted?); not executing it again", ref.uid, ref.attempt)
        return None

    def _run_claimed(self, ref: RunRef, payload: dict, directory: Path) -> dict:
        start = self.clock()
        self.active.add(ref.key)
        try:
            try:
                self.reporter.report_run(self._report(ref, RUNNING, start=start))
                result = self._execute(ref, payload, directory, start)
            except Exception as exc:  # noqa: BLE001 - whatever it is, the Run must end
                log.exception("Run %s attempt %s: runtimed failed", ref.uid, ref.attempt)
                result = Result(FAILED, "RuntimeError", f"runtimed failed: {exc}", None, start,
                                self.clock())
            final = self._report(ref, result.phase, result.reason, result.message,
                                 result.exit_code, start, result.end)
            self._record(directory / f"attempt-{ref.attempt}.result.json", final)
            self.reporter.report_run(final)
        finally:
            # only now: a heartbeat must not lose the Run before its terminal report was sent
            self.active.discard(ref.key)
        return final

    def _execute(self, ref: RunRef, payload: dict, directory: Path, start) -> Result:
        spec = parse(payload)  # a PayloadError here is a RuntimeError
        try:
            if spec.mode != "task":
                raise PrepareError(f"mode {spec.mode!r} is not supported by this runtimed")
            staged = stage(spec.source, spec.entrypoint, directory, git_timeout=self.git_timeout)
            cwd = execute.working_directory(self.config.workspace, spec.working_dir)
        except PrepareError as exc:
            return Result(FAILED, "PrepareSource", exc.message, None, start, self.clock())
        identity = identity_env(run_name=ref.name, run_namespace=ref.namespace, run_uid=ref.uid,
                                attempt=ref.attempt, pod_name=self.config.pod_name,
                                workspace=self.config.workspace, run_dir=directory)
        step = Step(staged.script, spec.args, cwd, step_env(spec.env, identity),
                    directory / f"attempt-{ref.attempt}.log", spec.timeout_seconds)
        options = {} if self.grace is None else {"grace": self.grace}
        return execute.run_step(step, clock=self.clock, **options)

    def _report(self, ref: RunRef, phase: str, reason: str = "", message: str = "",
                exit_code: int | None = None, start=None, end=None) -> dict:
        return run_report(namespace=ref.namespace, name=ref.name, uid=ref.uid,
                          attempt=ref.attempt, pod_name=self.config.pod_name,
                          pod_uid=self.config.pod_uid, phase=phase, reason=reason,
                          message=message, exit_code=exit_code, start=start, end=end)

    @staticmethod
    def _record(path: Path, report: dict) -> None:
        try:
            write_result(path, report)
        except OSError as exc:  # the report still goes out; only a redelivery cannot heal it
            log.error("cannot record %s: %s", path, exc)


def register(app: Celery, service: RunService):
    """Register ``runtimed.execute_run`` on ``app``, delegating to ``service``."""

    @app.task(name=EXECUTE_RUN_TASK, ignore_result=True, acks_late=False)
    def execute_run(payload: dict) -> None:
        service.execute_run(payload)

    return execute_run
