"""The detached process that drives one Kubernetes execution:
``python -m jobclasses.kubeexec.driver <dir> --lock-fd N --detach``.

It holds the execution's lock for its whole life (liveness, as the local supervisor), and
keeps ``result.json`` (the local result shape: phase, steps with status and exit code) and
the one ``log`` of the directory. In order: the batch Jobs of this Job's identity left by
another execution are deleted; the env Secret and the batch Job are created (a 409 is this
execution's own Job: only an unstarted execution is ever started again, so no step of it has
run); the pod is awaited Ready; the checkout is streamed into ``/work`` and the step scripts
into ``/steps`` by tar over exec; each step is one ``sh -ec <run>`` exec, recorded Running
*before* it starts, so a driver that dies with a step in flight leaves a non-final result
(observed as Unknown, never re-run); ``/outputs`` is streamed back into ``<dir>/outputs``;
the batch Job is deleted (propagation Background) whatever happened. Cancel (the marker,
SIGTERM) and the timeout close the running exec and delete the Job.
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

from .cluster import ApiCluster, Cluster, ClusterError, DryRunCluster
from .manifest import EXECUTION_LABEL, OUTPUTS_DIR, STEPS_DIR, WORK_DIR, leftover_selector

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


def step_argv(run: str) -> list[str]:
    return ["sh", "-ec", run]


class Driver:
    def __init__(self, directory: ExecutionDir, cluster: Cluster, spec: dict[str, Any]) -> None:
        self.dir = directory
        self.cluster = cluster
        self.spec = spec
        self.terminated = False
        self.pod = ""  # the Job's pod, once it is Ready
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
            "job": {"namespace": self.namespace, "name": self.name, "deleted": False},
            "outputs": [],
        }
        self.log = open(directory.log, "ab", buffering=0)  # noqa: SIM115 - lives with us

    # --- recording ---------------------------------------------------------------------------

    def save(self) -> None:
        write_atomic(self.dir.result, json.dumps(self.result))

    def say(self, line: str) -> None:
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
        except Exception as error:  # noqa: BLE001 - any failure is recorded, the Job deleted
            self.say(f"the execution failed: {error}")
            stop = result.FAILED, f"the execution failed: {error}"
        finally:
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
        self.clean_leftovers()
        secret = self.spec.get("secret")
        if secret is not None:
            self.cluster.create(secret)
        if not self.cluster.create(self.job):
            self.say(f"batch Job {self.name} exists already: this execution's own, adopted")
        else:
            self.say(f"created batch Job {self.namespace}/{self.name}")
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
        files = self.spec.get("files") or {}
        if files:
            stop = self.stream_in("checkout", checkout_argv(), _tar(files))
            if stop is not None:
                return stop
        return self.stream_in("steps", steps_argv(), _tar(step_files(self.spec["steps"])))

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
            self.namespace, self.pod, argv, stdin=archive, output=self.log.write, stop=self.stopping
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
            self.say(f"step {step['name']}")
            record.update(status=result.RUNNING, startedAt=result.now())
            self.save()  # before the exec: a driver dying now leaves it Running (Unknown)
            done = self.cluster.exec(
                self.namespace,
                self.pod,
                step_argv(step["run"]),
                stdin=None,
                output=self.log.write,
                stop=self.stopping,
            )
            record.update(finishedAt=result.now(), exitCode=done.exit_code)
            if done.stopped:
                stop = self.check_stop() or (result.CANCELLED, "stopped")
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

    def copy_outputs(self) -> None:
        if not self.pod:
            return
        self.say(f"streaming {OUTPUTS_DIR} back")
        done = self.cluster.exec(
            self.namespace,
            self.pod,
            outputs_argv(),
            stdin=None,
            output=self.log.write,
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

    def finish(self) -> None:
        """The batch Job (and its pod, in the background) and the env Secret are deleted."""
        try:
            self.cluster.delete("Job", self.namespace, self.name)
            if self.spec.get("secret") is not None:
                self.cluster.delete("Secret", self.namespace, self.name)
        except Exception as error:  # noqa: BLE001 - the adapter's delete retries it
            self.say(f"deleting batch Job {self.name} failed: {error}")
            return
        self.result["job"]["deleted"] = True
        self.say(f"deleted batch Job {self.namespace}/{self.name}")

    def on_sigterm(self, signum: int, frame: object) -> None:
        self.terminated = True


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
