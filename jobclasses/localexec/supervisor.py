"""The detached process that runs one execution's steps: ``python -m jobclasses.localexec.supervisor``.

It inherits the exclusive lock on ``<dir>/lock`` from ``start`` and holds it until it exits,
so liveness is the lock. Each step is ``/bin/sh -ec <run>`` in its own process group, all
steps in one work dir with one environment, their output appended to ``<dir>/log`` through a
pipe, with the spec's ``masked`` (secret) values replaced by ``***``. Once read, ``spec.json``
is rewritten without the env's values (masked) and the masked list, so the secrets stay on disk
only until the supervisor has started. After
every step ``result.json`` is rewritten. Cancel (the ``cancel`` marker, SIGTERM) and the
overall timeout kill the running step's group, SIGKILL after the grace; at the end every
group a step started is killed before the final result is written, so a final result means
nothing of the execution still runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from runtimed.masking import masking_writer

from . import procs, result, runner
from .layout import ExecutionDir, read_text, write_atomic
from .spec import ExecutionSpec, Step, from_json

POLL_SECONDS = 0.05
CHUNK = 65536
# a step's descendants may hold its output open: the log waits this long after its exit
READER_JOIN_SECONDS = 5.0
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

Stop = tuple[str, str]  # (final phase, message)


class Supervisor:
    def __init__(self, directory: ExecutionDir) -> None:
        self.dir = directory
        self.terminated = False
        self.groups: list[dict[str, Any]] = []
        spec, self.grace = from_json(directory.spec.read_text(encoding="utf-8"))
        self.spec: ExecutionSpec = spec
        self.deadline = (
            None if spec.timeout_seconds is None else time.monotonic() + spec.timeout_seconds
        )
        self.result: dict[str, Any] = {
            "phase": result.RUNNING,
            "message": "",
            "startTime": result.now(),
            "completionTime": None,
            "steps": [result.new_step(step.name) for step in spec.steps],
        }
        self.log_fd = os.open(directory.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.scrub_spec()

    def scrub_spec(self) -> None:
        """The spec on disk keeps no secret value once it is in this process's memory."""
        if not self.spec.masked:
            return
        data = json.loads(self.dir.spec.read_text(encoding="utf-8"))
        data["env"] = {
            name: "***" if value in self.spec.masked else value
            for name, value in data["env"].items()
        }
        data["masked"] = []
        write_atomic(self.dir.spec, json.dumps(data), mode=0o600)

    # --- recording ---------------------------------------------------------------------------

    def save(self) -> None:
        write_atomic(self.dir.result, json.dumps(self.result))

    def say(self, line: str) -> None:
        os.write(self.log_fd, f"==> {line}\n".encode())

    def cancel_requested(self) -> bool:
        return self.terminated or self.dir.cancel.exists()

    def cancel_message(self) -> str:
        reason = (read_text(self.dir.cancel) or "").strip()
        return reason or "the supervisor was terminated (SIGTERM)"

    # --- the run -----------------------------------------------------------------------------

    def run(self) -> None:
        self.save()
        stop: Stop | None = self.check_stop()
        if stop is None:
            stop = self.prepare()
        index = 0
        while stop is None and index < len(self.spec.steps):
            stop = self.run_step(index, self.spec.steps[index])
            index += 1
        for step in self.result["steps"]:
            if step["status"] == result.PENDING:
                step["status"] = result.SKIPPED
        self.kill_groups()
        phase, message = stop or (result.SUCCEEDED, f"all {len(self.spec.steps)} steps succeeded")
        self.result.update(phase=phase, message=message, completionTime=result.now())
        self.save()

    def check_stop(self) -> Stop | None:
        if self.cancel_requested():
            return result.CANCELLED, self.cancel_message()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return (
                result.TIMED_OUT,
                f"the execution exceeded its {self.spec.timeout_seconds}s timeout",
            )
        return None

    def prepare(self) -> Stop | None:
        """Write the inline files and create the working dir."""
        work = self.dir.work
        try:
            work.mkdir(exist_ok=True)
            for relative, content in self.spec.files.items():
                target = work / relative
                if not target.resolve().is_relative_to(work.resolve()):
                    raise ValueError(f"file path {relative!r} leaves the work dir")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
                target.chmod(0o755 if content.startswith("#!") else 0o644)
            self.cwd().mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as error:
            self.say(f"could not prepare the work dir: {error}")
            return result.FAILED, f"could not prepare the work dir: {error}"
        return None

    def cwd(self) -> Path:
        return self.dir.work / self.spec.working_dir if self.spec.working_dir else self.dir.work

    def environment(self) -> dict[str, str]:
        env = dict(self.spec.env)
        env.setdefault("PATH", DEFAULT_PATH)
        env.setdefault("HOME", str(self.dir.work))
        env.setdefault("LANG", "C.UTF-8")
        return env

    def run_step(self, index: int, step: Step) -> Stop | None:
        record = self.result["steps"][index]
        stop = self.check_stop()
        if stop is not None:
            return stop
        self.say(f"step {step.name}")
        record.update(status=result.RUNNING, startedAt=result.now())
        self.save()
        process = subprocess.Popen(
            ["/bin/sh", "-ec", step.run],
            cwd=self.cwd(),
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.spec.masked else self.log_fd,
            stderr=subprocess.STDOUT,
            process_group=0,
            preexec_fn=partial(procs.die_with_parent, os.getpid()),
        )
        reader = self.start_masking(process)
        self.groups.append({"pgid": process.pid, "start": procs.start_ticks(process.pid)})
        write_atomic(self.dir.groups, json.dumps(self.groups))
        code, stop = self.wait(process)
        if reader is not None:
            reader.join(READER_JOIN_SECONDS)
        record.update(finishedAt=result.now(), exitCode=code)
        if stop is not None:
            record["status"] = result.CANCELLED if stop[0] == result.CANCELLED else result.FAILED
            self.say(f"step {step.name}: {stop[1]}")
            return stop
        if code == 0:
            record["status"] = result.SUCCEEDED
            self.save()
            return None
        record["status"] = result.FAILED
        self.say(f"step {step.name} failed with exit code {code}")
        return result.FAILED, f"step {step.name} failed with exit code {code}"

    def start_masking(self, process: subprocess.Popen[bytes]) -> threading.Thread | None:
        """Copy the step's output into the log with the secret values masked."""
        if process.stdout is None:
            return None
        stdout = process.stdout
        write, flush = masking_writer(partial(os.write, self.log_fd), self.spec.masked)

        def pump() -> None:
            try:
                while chunk := stdout.read1(CHUNK):  # type: ignore[attr-defined]
                    write(chunk)
                flush()
            except (OSError, ValueError):
                pass
            finally:
                stdout.close()

        reader = threading.Thread(target=pump, name="log-masking", daemon=True)
        reader.start()
        return reader

    def wait(self, process: subprocess.Popen[bytes]) -> tuple[int | None, Stop | None]:
        """The step's exit code (shell style, 128+N for signal N), or why it was stopped."""
        while True:
            try:
                code = process.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                stop = self.check_stop()
                if stop is not None:
                    procs.terminate_group(process.pid, self.grace)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=1.0)
                    return None, stop
            else:
                return (128 - code if code < 0 else code), None

    def kill_groups(self) -> None:
        """Whatever a step left running (``sleep 100 &``) dies with the execution."""
        for group in self.groups:
            procs.terminate_group(group["pgid"], self.grace)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass

    def fail(self, error: Exception) -> None:
        self.kill_groups()
        for step in self.result["steps"]:
            if step["status"] in (result.PENDING, result.RUNNING):
                step["status"] = (
                    result.SKIPPED if step["status"] == result.PENDING else result.FAILED
                )
        message = f"the supervisor failed: {error}"
        self.result.update(phase=result.FAILED, message=message, completionTime=result.now())
        self.save()

    def on_sigterm(self, signum: int, frame: object) -> None:
        self.terminated = True


def main(argv: list[str] | None = None) -> int:
    directory, terminated = runner.begin("jobclasses.localexec.supervisor", argv)
    procs.become_subreaper()
    try:
        supervisor = Supervisor(directory)
    except Exception as error:  # an unreadable spec: say so instead of dying silently
        write_atomic(
            directory.result,
            json.dumps(
                {
                    "phase": result.FAILED,
                    "message": f"the supervisor could not start: {error}",
                    "startTime": result.now(),
                    "completionTime": result.now(),
                    "steps": [],
                }
            ),
        )
        raise
    supervisor.terminated = bool(terminated)
    signal.signal(signal.SIGTERM, supervisor.on_sigterm)
    try:
        supervisor.run()
    except Exception as error:  # record why, so the execution is not left Unknown
        supervisor.fail(error)
        raise
    return 0  # the lock goes with the process: held until the very end


if __name__ == "__main__":
    main()
    os._exit(0)  # at once: the result is written, the lock goes with the process
