"""The ``runtimed.execute_run`` and ``runtimed.cancel_run`` tasks, once per (uid, attempt).

Idempotency lives on disk, next to the Run: ``attempt-<n>.started`` is created with ``O_EXCL``
before anything runs, and ``attempt-<n>.result.json`` keeps the final report. A duplicate
delivery never executes again; if the attempt already finished it re-sends the recorded report,
so a lost report heals. A runtimed that died mid-Run leaves a marker without a result: the Run
is not executed again (the control plane fails it ExecutionLost). A cancel for an attempt that
has not started claims it first, so a late dispatch never runs it.

A Run's directory is ``.kruntimes/runs/<run-uid>/`` under the pod's workspace, or under its
PersistentWorkspace's directory when the payload names one (``persistent``); both the execute
and the cancel message carry the workspace, so they find the same markers. Which workspaces
the Runs here use is tracked for ``runtimed.delete_workspace`` (``cleanup``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from celery import Celery, Task

from . import persistent
from .attempt import Attempt, Outcome, StoreFactory
from .cleanup import WorkspaceCleaner
from .config import PodConfig
from .execute import (
    CANCELLED,
    FAILED,
    KILL_GRACE_SECONDS,
    Clock,
    Result,
    StepControl,
    utc_now,
)
from .function_attempt import serve_function
from .functions import FunctionTable
from .logship import LogShipper
from .outbox import Key, Outbox
from .payload import PayloadError, RunPayload, RunRef, parse, parse_run_ref, workspace_name
from .protocol import (
    CANCEL_RUN_TASK,
    CONFIRM_REPORTS_TASK,
    DELETE_WORKSPACE_TASK,
    EXECUTE_RUN_TASK,
    FUNCTION_REGISTERED,
    ActiveRun,
    LogChunk,
    Phase,
    Reason,
    Report,
    RunReport,
    report_key,
)
from .refs import ArtifactRef
from .reporting import Reporter, run_report
from .staging import GIT_TIMEOUT_SECONDS, PrepareError, ensure_run_dir
from .stores import build_store

log = logging.getLogger("runtimed.tasks")

RUNNING = Phase.RUNNING


def _object(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


class ActiveRuns:
    """The (uid, attempt) pairs executing in this process, and the final reports the control
    plane has not confirmed yet (the outbox): the heartbeat carries both, so a report lost on
    the way is applied at the next beat, and kept until it is."""

    def __init__(
        self, outbox: Outbox | None = None, functions: FunctionTable | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._keys: set[Key] = set()
        self.outbox = outbox if outbox is not None else Outbox()
        # the functions served here: their invocation figures ride on the heartbeat
        self.functions = functions if functions is not None else FunctionTable()

    def ended(self, report: Report) -> None:
        self.outbox.put(report)

    def recent_reports(self) -> list[Report]:
        """The oldest unconfirmed final reports (as many as one heartbeat carries)."""
        return self.outbox.pending()

    def confirm(self, keys: Iterable[Key]) -> int:
        return self.outbox.confirm(keys)

    def add(self, key: Key) -> None:
        with self._lock:
            self._keys.add(key)

    def discard(self, key: Key) -> None:
        with self._lock:
            self._keys.discard(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys

    def snapshot(self) -> list[ActiveRun]:
        with self._lock:
            keys = sorted(self._keys)
        stats = self.functions.stats()
        active: list[ActiveRun] = []
        for uid, attempt in keys:
            entry: ActiveRun = {"uid": uid, "attempt": attempt}
            if (uid, attempt) in stats:
                entry["function"] = stats[(uid, attempt)]
            active.append(entry)
        return active


def claim(marker: Path) -> bool:
    """Atomically mark an attempt as started; False if something already did."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{os.getpid()}\n")
    return True


def read_result(path: Path) -> dict[str, Any] | None:
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None
    return recorded if isinstance(recorded, dict) else None


def write_result(path: Path, report: Report) -> None:
    """Keep the final report, atomically (a reader never sees half a file)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(report, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


class RunService:
    """Executes Runs for one pod; the Celery tasks are thin wrappers around its methods."""

    def __init__(
        self,
        config: PodConfig,
        reporter: Reporter,
        *,
        clock: Clock = utc_now,
        active: ActiveRuns | None = None,
        grace: float = KILL_GRACE_SECONDS,
        git_timeout: float = GIT_TIMEOUT_SECONDS,
        store_factory: StoreFactory = build_store,
        ship_logs: bool = True,
    ) -> None:
        self.config = config
        self.reporter = reporter
        self.clock = clock
        self.active = active if active is not None else ActiveRuns()
        self.grace = grace
        self.git_timeout = git_timeout
        self.store_factory = store_factory
        self.ship_logs = ship_logs
        self._controls_lock = threading.Lock()
        self._controls: dict[Key, StepControl] = {}
        self.workspaces = persistent.WorkspaceUse()
        self.cleaner = WorkspaceCleaner(config, reporter, self.workspaces)

    def execute_run(self, payload: Any) -> Report | None:
        """Handle one delivery; returns the final report, or None when nothing was done."""
        with self._using_workspace(payload):
            return self._execute_delivery(payload)

    def delete_workspace(self, payload: Any) -> bool:
        """Cleanup of a PersistentWorkspace of this pod: see ``cleanup``."""
        return self.cleaner.delete(payload)

    @contextmanager
    def _using_workspace(self, payload: Any) -> Iterator[None]:
        """Mark the message's workspace in use while it is handled (a delete waits)."""
        try:
            name = workspace_name(payload) if isinstance(payload, dict) else None
        except PayloadError:
            name = None  # _accept fails the Run
        if name is None:
            yield
            return
        self.workspaces.enter(name)
        try:
            yield
        finally:
            self.workspaces.leave(name)

    def _execute_delivery(self, payload: Any) -> Report | None:
        accepted = self._accept(payload)
        if not isinstance(accepted, tuple):
            return accepted
        ref, directory = accepted
        if not claim(directory / f"attempt-{ref.attempt}.started"):
            return self._duplicate(ref, directory)
        # a cancel landing between the claim and here is re-sent by the control plane
        control = self._control(ref.key)
        try:
            return self._run_claimed(ref, payload, directory, control)
        finally:
            self._forget_control(ref.key)

    def terminate_all(self) -> int:
        """The pod shuts down and its grace is over: stop every step still running (each
        attempt ends PodTerminating and is reported). Returns how many were stopped."""
        with self._controls_lock:
            controls = list(self._controls.values())
        stopped = sum(control.terminate(self.grace) for control in controls)
        if stopped:
            log.warning("termination grace over: stopping %d running step(s)", stopped)
        return stopped

    def terminate_functions(self) -> int:
        """The pod shuts down: the functions it serves end now (PodTerminating; the control
        plane registers them again elsewhere per their retry policy), their calls in flight
        drained first. Nothing of theirs would finish by waiting out the grace."""
        with self._controls_lock:
            controls = [
                control
                for (uid, attempt), control in self._controls.items()
                if (serving := self.active.functions.get(uid)) is not None
                and serving.attempt == attempt
            ]
        stopped = sum(control.terminate(self.grace) for control in controls)
        if stopped:
            log.info("stopping: %d function Run(s) end now", stopped)
        return stopped

    def confirm_reports(self, payload: Any) -> int:
        """The control plane recorded these final reports: stop repeating them."""
        if not isinstance(payload, dict) or not isinstance(payload.get("reports"), list):
            log.error("dropping a malformed confirmation")
            return 0
        pod = _object(payload.get("pod"))
        if (pod.get("name"), pod.get("uid")) != (self.config.pod_name, self.config.pod_uid):
            return 0  # meant for another incarnation of this pod's name
        keys = [
            key
            for key in map(report_key, [r for r in payload["reports"] if isinstance(r, dict)])
            if key is not None
        ]
        return self.active.confirm(keys)

    def cancel_run(self, payload: Any) -> Report | None:
        """Cancel an attempt: kill it if it runs here, or make sure it never starts."""
        with self._using_workspace(payload):
            return self._cancel(payload)

    def _cancel(self, payload: Any) -> Report | None:
        accepted = self._accept(payload)
        if not isinstance(accepted, tuple):
            return accepted
        ref, directory = accepted
        with self._controls_lock:
            control = self._controls.get(ref.key)
        if control is not None:
            if control.cancel(self.grace):
                log.info("Run %s attempt %s: cancelling", ref.uid, ref.attempt)
            return None
        if claim(directory / f"attempt-{ref.attempt}.started"):
            final = self._report(
                ref,
                CANCELLED,
                "Cancelled",
                "the Run was cancelled before it started",
                None,
                None,
                self.clock(),
            )
            return self._finish(ref, directory, final)
        return self._duplicate(ref, directory)

    def _accept(self, payload: Any) -> tuple[RunRef, Path] | RunReport | None:
        """The Run a message names and its directory; None when the message is not for this
        pod, or the failure report already sent when its workspace name is invalid or the
        disk is broken."""
        try:
            ref = parse_run_ref(payload)
        except PayloadError as exc:
            log.error("dropping a message that names no valid Run: %s", exc)
            return None
        if not self._for_this_pod(ref, payload):
            return None
        try:
            return ref, self._run_dir(ref, payload)
        except PayloadError as exc:  # a workspace name runtimed must not use
            log.warning("Run %s attempt %s cannot start: %s", ref.uid, ref.attempt, exc)
            return self._fail_unclaimed(
                ref, Reason.PREPARE_SOURCE, f"the Run cannot be executed: {exc}"
            )
        except (OSError, PrepareError, persistent.WorkspaceError) as exc:  # a broken disk
            log.error("Run %s attempt %s cannot start: %s", ref.uid, ref.attempt, exc)
            return self._fail_unclaimed(
                ref, Reason.RUNTIME_ERROR, f"runtimed cannot start the Run: {exc}"
            )

    def _run_dir(self, ref: RunRef, payload: Mapping[str, Any]) -> Path:
        """The Run's directory, under its PersistentWorkspace (created if missing) or the pod's
        workspace."""
        name = workspace_name(payload)
        root = self.config.workspace
        if name is not None:
            root = persistent.ensure(self.config.workspace, name)
        return ensure_run_dir(root, ref.uid)

    def _fail_unclaimed(self, ref: RunRef, reason: str, message: str) -> RunReport:
        """End an attempt that cannot even be claimed: report it, record nothing (nothing ran;
        a redelivery fails it the same way)."""
        now = self.clock()
        final = self._report(ref, FAILED, reason, message, None, now, now)
        self.reporter.report_run(final)
        return final

    def _control(self, key: Key) -> StepControl:
        with self._controls_lock:
            return self._controls.setdefault(key, StepControl())

    def _forget_control(self, key: Key) -> None:
        with self._controls_lock:
            self._controls.pop(key, None)

    def _for_this_pod(self, ref: RunRef, payload: Mapping[str, Any]) -> bool:
        pod = _object(payload.get("pod"))
        name, uid = pod.get("name"), pod.get("uid")
        if name in (None, self.config.pod_name) and uid in (None, self.config.pod_uid):
            return True
        log.warning(
            "Run %s/%s attempt %s was dispatched to pod %s (uid %s), not to this pod "
            "%s (uid %s); ignoring it",
            ref.namespace,
            ref.name,
            ref.attempt,
            name,
            uid,
            self.config.pod_name,
            self.config.pod_uid,
        )
        return False

    def _duplicate(self, ref: RunRef, directory: Path) -> Report | None:
        recorded = read_result(directory / f"attempt-{ref.attempt}.result.json")
        if recorded is not None:
            log.info(
                "Run %s attempt %s already finished; re-sending its report", ref.uid, ref.attempt
            )
            self.reporter.report_run(recorded)
            return recorded
        if ref.key in self.active:
            log.info(
                "Run %s attempt %s is already running; duplicate ignored", ref.uid, ref.attempt
            )
        else:
            log.warning(
                "Run %s attempt %s was started before and never finished (runtimed "
                "restarted?); not executing it again",
                ref.uid,
                ref.attempt,
            )
        return None

    def _run_claimed(
        self, ref: RunRef, payload: Mapping[str, Any], directory: Path, control: StepControl
    ) -> RunReport:
        start = self.clock()
        self.active.add(ref.key)
        store_spec: Mapping[str, Any] | None = (
            payload.get("artifactStore") if isinstance(payload.get("artifactStore"), dict) else None
        )
        shipper = self._shipper(ref)
        try:
            try:
                self.reporter.report_run(
                    self._report(ref, RUNNING, start=start, artifact_store=store_spec)
                )
                outcome = self._execute(ref, payload, directory, start, control, shipper)
            except PayloadError as exc:  # a spec runtimed cannot execute: not a fault here
                log.warning(
                    "Run %s attempt %s: cannot execute its spec: %s", ref.uid, ref.attempt, exc
                )
                outcome = Outcome(
                    Result(
                        FAILED,
                        Reason.PREPARE_SOURCE,
                        f"the Run cannot be executed: {exc}",
                        None,
                        start,
                        self.clock(),
                    )
                )
            except Exception as exc:  # noqa: BLE001 - whatever it is, the Run must end
                # the traceback stays in runtimed's log; the Run gets one line
                log.exception("Run %s attempt %s: runtimed failed", ref.uid, ref.attempt)
                outcome = Outcome(
                    Result(
                        FAILED,
                        Reason.RUNTIME_ERROR,
                        f"runtimed failed: {type(exc).__name__}: {exc}",
                        None,
                        start,
                        self.clock(),
                    )
                )
            tail = None
            if shipper is not None:  # the last output rides on the final report
                shipper.close(hand_over_tail=True)
                tail = shipper.tail
            result = outcome.result
            final = self._report(
                ref,
                result.phase,
                result.reason,
                result.message,
                result.exit_code,
                start,
                result.end,
                outputs=outcome.outputs,
                artifact_refs=outcome.artifact_refs,
                artifact_store=store_spec,
            )
            self._finish(ref, directory, final, tail)
        finally:
            # only now: a heartbeat must not lose the Run before its terminal report was sent
            self.active.discard(ref.key)
        return final

    def _finish(
        self, ref: RunRef, directory: Path, final: RunReport, tail: LogChunk | None = None
    ) -> RunReport:
        """Record the final report (a redelivery re-sends it), keep it for the heartbeats
        (without the log), and send it with the attempt's last output."""
        self._record(directory / f"attempt-{ref.attempt}.result.json", final)
        self.active.ended(final)
        self.reporter.report_run({**final, "log": tail} if tail else final)
        return final

    def _shipper(self, ref: RunRef) -> LogShipper | None:
        if not self.ship_logs:
            return None
        # one quick retry: a chunk is not worth stalling the pipe for
        return LogShipper(
            lambda name, kwargs: self.reporter.send(name, kwargs, retries=1),
            namespace=ref.namespace,
            name=ref.name,
            uid=ref.uid,
            attempt=ref.attempt,
            pod_uid=self.config.pod_uid,
        )

    def _execute(
        self,
        ref: RunRef,
        payload: Mapping[str, Any],
        directory: Path,
        start: datetime,
        control: StepControl,
        shipper: LogShipper | None,
    ) -> Outcome:
        spec = parse(payload)  # a PayloadError here is PrepareSource
        if spec.mode == "function":
            return Outcome(self._serve_function(ref, spec, directory, start, control, payload))
        attempt = Attempt(
            self.config,
            ref,
            spec,
            directory,
            clock=self.clock,
            control=control,
            on_output=shipper.write if shipper is not None else None,
            grace=self.grace,
            git_timeout=self.git_timeout,
            store_factory=self.store_factory,
        )
        return attempt.run(start)

    def _serve_function(
        self,
        ref: RunRef,
        spec: RunPayload,
        directory: Path,
        start: datetime,
        control: StepControl,
        payload: Mapping[str, Any],
    ) -> Result:
        store_spec = _object(payload.get("artifactStore")) or None

        def ready() -> None:
            self.reporter.report_run(
                self._report(
                    ref,
                    Phase.READY,
                    FUNCTION_REGISTERED,
                    "the function is registered and serves invocations",
                    start=start,
                    artifact_store=store_spec,
                )
            )

        return serve_function(
            self.config,
            ref,
            spec,
            directory,
            start,
            table=self.active.functions,
            control=control,
            clock=self.clock,
            on_ready=ready,
            git_timeout=self.git_timeout,
        )

    def _report(
        self,
        ref: RunRef,
        phase: str,
        reason: str = "",
        message: str = "",
        exit_code: int | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        *,
        outputs: Mapping[str, str] | None = None,
        artifact_refs: Sequence[ArtifactRef] | None = None,
        artifact_store: Mapping[str, Any] | None = None,
    ) -> RunReport:
        return run_report(
            namespace=ref.namespace,
            name=ref.name,
            uid=ref.uid,
            attempt=ref.attempt,
            pod_name=self.config.pod_name,
            pod_uid=self.config.pod_uid,
            phase=phase,
            reason=reason,
            message=message,
            exit_code=exit_code,
            start=start,
            end=end,
            outputs=outputs,
            artifact_refs=artifact_refs,
            artifact_store=artifact_store,
        )

    @staticmethod
    def _record(path: Path, report: RunReport) -> None:
        try:
            write_result(path, report)
        except OSError as exc:  # the report still goes out; only a redelivery cannot heal it
            log.error("cannot record %s: %s", path, exc)


def register(app: Celery, service: RunService) -> Task[[dict[str, Any]], None]:
    """Register ``runtimed.execute_run``, ``runtimed.cancel_run``,
    ``runtimed.confirm_reports`` and ``runtimed.delete_workspace`` on ``app``."""

    @app.task(name=EXECUTE_RUN_TASK, ignore_result=True, acks_late=False)
    def execute_run(payload: dict[str, Any]) -> None:
        service.execute_run(payload)

    @app.task(name=CANCEL_RUN_TASK, ignore_result=True, acks_late=False)
    def cancel_run(payload: dict[str, Any]) -> None:
        service.cancel_run(payload)

    @app.task(name=CONFIRM_REPORTS_TASK, ignore_result=True, acks_late=False)
    def confirm_reports(payload: dict[str, Any]) -> None:
        service.confirm_reports(payload)

    @app.task(name=DELETE_WORKSPACE_TASK, ignore_result=True, acks_late=False)
    def delete_workspace(payload: dict[str, Any]) -> None:
        service.delete_workspace(payload)

    return execute_run
