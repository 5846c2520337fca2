"""The detached process that drives one Kubernetes execution:
``python -m jobclasses.kubeexec.driver <dir> --lock-fd N --detach``.

It holds the execution's lock for its whole life (liveness, as the local supervisor), and
keeps ``result.json`` (the local result shape: phase, steps with status and exit code) and
the one ``log`` of the directory. The directory is a cache: the record that counts is in the
cluster (``record.py``), on the batch Job's annotation and in the pod, mirrored at every
change of the result, so a driver started again on an empty directory (``"resume": true``:
it never creates a batch Job) goes on from what the cluster says.

In order: the batch Jobs of this Job's identity left by another execution are deleted; the
env Secret and the batch Job are created (a 409 is this execution's own Job: its record is
adopted); the pod is awaited Ready (a pod that ended fails the execution with its exit code
and termination message); unless the record says so already, the checkout is streamed into
``/work`` and the step scripts into ``/steps`` by tar over exec; each step is one exec that
starts the step once, detached in its own session, and follows its log to its exit code
(recorded Running *before* it starts; a step the record says ended is never started again,
one it says Running is followed); ``/outputs`` is streamed back into ``<dir>/outputs``. The
batch Job stays: the adapter deletes it once it has observed the final result. Cancel (the
marker, SIGTERM) and the timeout close the running exec and kill the step's process group.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import tarfile
import time
from pathlib import Path
from typing import Any, TextIO

from jobclasses.localexec import result, runner
from jobclasses.localexec.layout import ExecutionDir, read_text, write_atomic
from runtimed.masking import StreamMasker, mask_file

from . import record
from .cluster import ApiCluster, Cluster, ClusterError, DryRunCluster
from .manifest import (
    EXECUTION_LABEL,
    OUTPUTS_DIR,
    RECORD_ANNOTATION,
    STEP_STATE_DIR,
    STEPS_DIR,
    WORK_DIR,
    leftover_selector,
)

DEFAULT_POD_READY_TIMEOUT_SECONDS = 600.0

Stop = tuple[str, str]


def outputs_dir(directory: ExecutionDir) -> Path:
    return directory.path / "outputs"


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path, content in sorted(files.items()):
            data = content.encode("utf-8", "surrogatepass")
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o755 if content.startswith("#!") else 0o644
            info.mtime = int(time.time())
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def step_files(steps: list[dict[str, str]]) -> dict[str, str]:
    """The steps as scripts for ``/steps`` (``<NN>-<name>.sh``), so one step may run another's."""
    return {f"{index:02d}-{step['name']}.sh": step["run"] for index, step in enumerate(steps)}


def checkout_argv() -> list[str]:
    return ["tar", "-xf", "-", "-C", WORK_DIR]


def steps_argv() -> list[str]:
    return ["tar", "-xf", "-", "-C", STEPS_DIR]


def outputs_argv() -> list[str]:
    return ["tar", "-cf", "-", "-C", OUTPUTS_DIR, "."]


def step_state(index: int) -> str:
    return f"{STEP_STATE_DIR}/{index:02d}"


def step_argv(index: int, run: str) -> list[str]:
    """Start step ``index`` once (detached), follow its log, exit with its exit code."""
    return ["sh", "-c", record.STEP_SCRIPT, "step", step_state(index), run]


def kill_argv(index: int) -> list[str]:
    return ["sh", "-c", record.KILL_SCRIPT, "kill", step_state(index)]


class Lost(Exception):  # noqa: N818 - a state of the cluster, not a bug
    """Resuming, the batch Job is gone: nothing is recorded, the adapter concludes."""


ENDED = (result.SUCCEEDED, result.FAILED, result.CANCELLED)


class Driver:
    def __init__(self, directory: ExecutionDir, cluster: Cluster, spec: dict[str, Any]) -> None:
        self.dir = directory
        self.cluster = cluster
        self.spec = spec
        self.terminated = False
        self.pod = ""  # the Job's pod, once it is Ready
        self.resume = bool(spec.get("resume"))
        self.recorded = False  # the batch Job is there to carry the record
        self.job = spec["manifest"]
        self.namespace = self.job["metadata"]["namespace"]
        self.name = self.job["metadata"]["name"]
        timeout = spec.get("timeoutSeconds")
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.result: dict[str, Any] = {
            "phase": result.RUNNING,
            "message": "",
            "startTime": result.now(),
            "completionTime": None,
            "steps": [result.new_step(step["name"]) for step in spec["steps"]],
            "job": {"namespace": self.namespace, "name": self.name},
            "prepared": False,
            "outputs": [],
        }
        self.log = open(directory.log, "ab", buffering=0)  # noqa: SIM115 - lives with us
        self.masked = tuple(spec.get("masked") or ())
        self.masker = StreamMasker(self.masked)

    def output(self, chunk: bytes) -> None:
        """What an exec prints, into the log with the secret values masked."""
        if masked := self.masker.feed(chunk):
            self.log.write(masked)

    def flush_output(self) -> None:
        if rest := self.masker.flush():
            self.log.write(rest)

    # --- recording ---------------------------------------------------------------------------

    def save(self) -> None:
        """The record in the cluster first (it outlives this directory), then result.json."""
        if self.recorded:
            try:
                self.cluster.annotate_job(
                    self.namespace, self.name, {RECORD_ANNOTATION: record.encode(self.result)}
                )
            except Exception as error:  # noqa: BLE001 - the pod's step state still holds
                self.say(f"recording on batch Job {self.name} failed: {error}")
        write_atomic(self.dir.result, json.dumps(self.result))

    def say(self, line: str) -> None:
        self.flush_output()  # the exec's last bytes come before the line
        self.log.write(f"==> {line}\n".encode())

    def check_stop(self) -> Stop | None:
        if self.terminated or self.dir.cancel.exists():
            reason = (read_text(self.dir.cancel) or "").strip()
            return result.CANCELLED, reason or "the driver was terminated (SIGTERM)"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return (
                result.TIMED_OUT,
                f"the execution exceeded its {self.spec['timeoutSeconds']}s timeout",
            )
        return None

    def stopping(self) -> bool:
        return self.check_stop() is not None

    # --- the run -----------------------------------------------------------------------------

    def run(self) -> None:
        self.save()
        stop: Stop | None = None
        try:
            stop = self.check_stop() or self.start() or self.run_steps()
            if stop is None or stop[0] == result.FAILED:
                self.copy_outputs()
        except Lost as lost:
            self.say(str(lost))
            return
        except Exception as error:  # noqa: BLE001 - any failure is recorded, the Job deleted
            self.say(f"the execution failed: {error}")
            stop = result.FAILED, f"the execution failed: {error}"
        finally:
            self.flush_output()
            self.finish()
        for step in self.result["steps"]:
            if step["status"] == result.PENDING:
                step["status"] = result.SKIPPED
            elif step["status"] == result.RUNNING:
                step["status"] = result.FAILED
        phase, message = stop or (
            result.SUCCEEDED,
            f"all {len(self.spec['steps'])} steps succeeded",
        )
        self.result.update(phase=phase, message=message, completionTime=result.now())
        self.save()

    def start(self) -> Stop | None:
        if self.resume:
            self.adopt("resuming from it")
        else:
            self.clean_leftovers()
            secret = self.spec.get("secret")
            if secret is not None:
                self.cluster.create(secret)
            if self.cluster.create(self.job):
                self.say(f"created batch Job {self.namespace}/{self.name}")
                self.recorded = True
                self.save()
            else:
                self.adopt("this execution's own, adopted")
        ready_timeout = float(
            self.spec.get("podReadyTimeoutSeconds") or DEFAULT_POD_READY_TIMEOUT_SECONDS
        )
        if self.deadline is not None:
            ready_timeout = max(0.0, min(ready_timeout, self.deadline - time.monotonic()))
        try:
            self.pod = self.cluster.wait_pod_ready(
                self.namespace, self.spec["executionId"], self.stopping, ready_timeout
            )
        except ClusterError as error:
            stop = self.check_stop()
            if stop is not None:
                return stop
            return result.FAILED, f"the pod did not become Ready: {error}"
        self.say(f"pod {self.pod} is Ready")
        if self.result["prepared"]:
            return None
        files = self.spec.get("files") or {}
        if files:
            stop = self.stream_in("checkout", checkout_argv(), _tar(files))
            if stop is not None:
                return stop
        stop = self.stream_in("steps", steps_argv(), _tar(step_files(self.spec["steps"])))
        if stop is None:
            self.result["prepared"] = True
            self.save()
        return stop

    def adopt(self, why: str) -> None:
        """The batch Job exists: its record (steps ended, Running, prepared) is taken over."""
        job = self.cluster.read_job(self.namespace, self.name)
        if job is None:
            raise Lost(f"batch Job {self.namespace}/{self.name} is gone from the cluster")
        self.recorded = True
        self.say(f"batch Job {self.name} exists already: {why}")
        found = record.of(job)
        if found is None:
            return
        steps = self.result["steps"]
        for index, step in enumerate(found["steps"][: len(steps)]):
            if isinstance(step, dict) and step.get("name") == steps[index]["name"]:
                steps[index] = {**steps[index], **step}
        self.result["prepared"] = bool(found.get("prepared"))
        self.result["startTime"] = found.get("startTime") or self.result["startTime"]
        timeout = self.spec.get("timeoutSeconds")
        if timeout is not None and self.resume:  # the deadline runs from the first start
            elapsed = time.time() - _epoch(self.result["startTime"])
            self.deadline = time.monotonic() + timeout - max(0.0, elapsed)

    def clean_leftovers(self) -> None:
        """Batch Jobs of this Job's identity from another execution (a Job deleted and
        re-created under its name while a driver was gone) go before this one starts."""
        selector = leftover_selector(self.spec["jobName"])
        for job in self.cluster.list_jobs(self.namespace, selector):
            meta = job.get("metadata") or {}
            if (meta.get("labels") or {}).get(EXECUTION_LABEL) == self.spec["executionId"]:
                continue
            self.say(f"deleting leftover batch Job {meta.get('name')} of another execution")
            self.cluster.delete("Job", self.namespace, meta["name"])
            self.cluster.delete("Secret", self.namespace, meta["name"])

    def stream_in(self, what: str, argv: list[str], archive: bytes) -> Stop | None:
        self.say(f"streaming the {what} in ({len(archive)} bytes)")
        done = self.cluster.exec(
            self.namespace, self.pod, argv, stdin=archive, output=self.output, stop=self.stopping
        )
        if done.stopped:
            return self.check_stop() or (result.CANCELLED, "stopped")
        if done.exit_code != 0:
            self.say(f"streaming the {what} failed (exit code {done.exit_code})")
            return result.FAILED, f"streaming the {what} in failed (exit code {done.exit_code})"
        return None

    def run_steps(self) -> Stop | None:
        for index, step in enumerate(self.spec["steps"]):
            stop = self.check_stop()
            if stop is not None:
                return stop
            record = self.result["steps"][index]
            if record["status"] in ENDED:  # recorded by an earlier driver: never again
                ended = self.recorded_end(record)
                if ended is not None:
                    return ended
                continue
            if record["status"] == result.RUNNING:
                self.say(f"step {step['name']} (started earlier: following it)")
            else:
                self.say(f"step {step['name']}")
                record.update(status=result.RUNNING, startedAt=result.now())
                self.save()  # before the exec: a driver dying now leaves it Running
            done = self.cluster.exec(
                self.namespace,
                self.pod,
                step_argv(index, step["run"]),
                stdin=None,
                output=self.output,
                stop=self.stopping,
            )
            self.flush_output()
            record.update(finishedAt=result.now(), exitCode=done.exit_code)
            if done.stopped:
                stop = self.check_stop() or (result.CANCELLED, "stopped")
                self.kill_step(index)
                record["status"] = (
                    result.CANCELLED if stop[0] == result.CANCELLED else result.FAILED
                )
                self.say(f"step {step['name']}: {stop[1]}")
                return stop
            if done.exit_code == 0:
                record["status"] = result.SUCCEEDED
                self.save()
                continue
            record["status"] = result.FAILED
            self.say(f"step {step['name']} failed with exit code {done.exit_code}")
            return result.FAILED, f"step {step['name']} failed with exit code {done.exit_code}"
        return None

    def recorded_end(self, step: dict[str, Any]) -> Stop | None:
        if step["status"] == result.SUCCEEDED:
            return None
        if step["status"] == result.CANCELLED:
            return result.CANCELLED, f"step {step['name']} was cancelled"
        return result.FAILED, f"step {step['name']} failed with exit code {step.get('exitCode')}"

    def kill_step(self, index: int) -> None:
        """The step's process group (it is detached from the exec just closed)."""
        try:
            self.cluster.exec(
                self.namespace,
                self.pod,
                kill_argv(index),
                stdin=None,
                output=self.output,
                stop=lambda: False,
            )
        except Exception as error:  # noqa: BLE001 - the batch Job's deletion ends it anyway
            self.say(f"killing step {index} failed: {error}")

    def copy_outputs(self) -> None:
        if not self.pod:
            return
        self.say(f"streaming {OUTPUTS_DIR} back")
        done = self.cluster.exec(
            self.namespace,
            self.pod,
            outputs_argv(),
            stdin=None,
            output=self.output,
            stop=self.stopping,
            keep_stdout=True,
        )
        if done.stopped or done.exit_code != 0:
            self.say(f"streaming {OUTPUTS_DIR} back failed (exit code {done.exit_code})")
            return
        target = outputs_dir(self.dir)
        target.mkdir(exist_ok=True)
        if done.output:
            with tarfile.open(fileobj=io.BytesIO(done.output), mode="r:") as archive:
                archive.extractall(target, filter="data")
        self.result["outputs"] = [
            {"path": str(path.relative_to(target)), "size": path.stat().st_size}
            for path in sorted(target.rglob("*"))
            if path.is_file()
        ]
        for path in target.rglob("*"):
            mask_file(path, self.masked)

    def finish(self) -> None:
        """The batch Job stays (the record) until the adapter has observed the result and
        deletes it with its Secret; the dry run prints those deletes here."""
        if self.spec.get("dryRun"):
            self.cluster.delete("Job", self.namespace, self.name)
            if self.spec.get("secret") is not None:
                self.cluster.delete("Secret", self.namespace, self.name)

    def on_sigterm(self, signum: int, frame: object) -> None:
        self.terminated = True


def _epoch(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return time.time()


def cluster_for(spec: dict[str, Any], out: TextIO | None = None) -> Cluster:
    if spec.get("dryRun"):
        return DryRunCluster(out or sys.stdout)
    from kubernetes import client

    from portal.kube import configuration

    connection = spec.get("connection") or {}
    config = configuration(
        host=connection.get("host") or "", kubeconfig=connection.get("kubeconfig") or ""
    )
    return ApiCluster(client.ApiClient(config), float(spec.get("requestTimeoutSeconds") or 30))


def main(argv: list[str] | None = None) -> int:
    directory, terminated = runner.begin("jobclasses.kubeexec.driver", argv)
    try:
        spec = json.loads(directory.spec.read_text(encoding="utf-8"))
        log = open(directory.log, "a", encoding="utf-8")  # noqa: SIM115 - the dry run's out
        driver = Driver(directory, cluster_for(spec, log), spec)
    except Exception as error:
        write_atomic(
            directory.result,
            json.dumps(
                {
                    "phase": result.FAILED,
                    "message": f"the driver could not start: {error}",
                    "startTime": result.now(),
                    "completionTime": result.now(),
                    "steps": [],
                }
            ),
        )
        raise
    driver.terminated = bool(terminated)
    signal.signal(signal.SIGTERM, driver.on_sigterm)
    driver.run()
    return 0


if __name__ == "__main__":
    main()
    os._exit(0)  # at once: the result is written, the lock goes with the process
