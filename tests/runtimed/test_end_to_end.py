"""One Run through real Redis: ``python -m runtimed`` as its own process, the test playing the
control plane (it dispatches ``runtimed.execute_run`` and consumes the ``control`` queue)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from celery import Celery
from kombu import Connection, Exchange, Queue

from tests.helpers.payloads import make_payload
from tests.helpers.services import require_redis

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/14"
WAIT = 30.0


def start_runtimed(pod: str, pod_uid: str, workspace: Path, log: Path) -> subprocess.Popen:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CELERY_", "KRUNTIME_", "KRUNTIMES_", "DJANGO_"))
    }
    env.update(
        {
            "CELERY_BROKER_URL": REDIS_URL,
            "PYTHONPATH": str(ROOT),
            "KRUNTIME_POD_NAME": pod,
            "KRUNTIME_POD_UID": pod_uid,
            "KRUNTIME_POD_NAMESPACE": "ci",
            "KRUNTIME_RUNTIME": "bash",
            "KRUNTIME_WORKSPACE": str(workspace),
            "KRUNTIME_CAPACITY": '{"runs": 1}',
            "KRUNTIME_HEARTBEAT_SECONDS": "0.5",
        }
    )
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "runtimed"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def forget_queue(name: str) -> None:
    """Drop this test pod's queue and its binding from Redis (control stays: it is shared)."""
    import redis

    redis.Redis.from_url(REDIS_URL).delete(
        name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}"
    )


class ControlQueue:
    """The ``control`` queue as the control plane sees it: Celery protocol v2 messages."""

    def __init__(self, connection: Connection, pod: str) -> None:
        self.pod = pod
        control = Queue("control", Exchange("control", type="direct"), routing_key="control")
        self.queue = connection.SimpleQueue(control)
        self.seen: list[tuple[str, dict]] = []

    def next_for_pod(self, task: str, deadline: float) -> dict:
        """The next ``task`` message about this pod (others are acknowledged and set aside)."""
        while time.monotonic() < deadline:
            try:
                message = self.queue.get(block=True, timeout=0.5)
            except queue.Empty:
                continue
            message.ack()
            name = message.headers["task"]
            args, kwargs, _embed = message.decode()  # protocol v2 body
            if len(kwargs) != 1 or not isinstance(next(iter(kwargs.values())), dict):
                continue  # not a report of runtimed's (something else left on the queue)
            (value,) = kwargs.values()
            if value.get("podName") != self.pod:
                continue  # a leftover from another run of this test
            self.seen.append((name, value))
            if name == task:
                return value
        raise AssertionError(f"no {task} for {self.pod} within {WAIT}s; saw {self.seen}")


@pytest.mark.redis
def test_a_run_through_real_redis(tmp_path):
    require_redis(REDIS_URL)
    pod, pod_uid = f"e2e-{uuid.uuid4().hex[:10]}", str(uuid.uuid4())
    workspace = tmp_path / "workspace"
    log = tmp_path / "runtimed.log"
    with Connection(REDIS_URL) as connection:
        control = ControlQueue(connection, pod)
        process = start_runtimed(pod, pod_uid, workspace, log)
        try:
            deadline = time.monotonic() + WAIT
            beat = control.next_for_pod("scheduling.runtime_pod_heartbeat", deadline)
            assert (beat["podUID"], beat["runtime"], beat["capacity"]) == (
                pod_uid,
                "bash",
                {"runs": 1},
            )
            assert beat["workspacePath"] == str(workspace.resolve())
            assert beat["pid"] == process.pid

            run_uid = str(uuid.uuid4())
            payload = make_payload(
                'echo "hello $WHO" > out.txt',
                uid=run_uid,
                pod=(pod, pod_uid),
                env=[{"name": "WHO", "value": "redis"}],
                timeoutSeconds=20,
            )
            sender = Celery("e2e-control", set_as_current=False)
            with sender.connection_for_write(REDIS_URL) as conn:
                sender.send_task(
                    "runtimed.execute_run",
                    kwargs={"payload": payload},
                    queue=f"runtimed.{pod}",
                    connection=conn,
                )

            running = control.next_for_pod("scheduling.report_run", deadline)
            done = control.next_for_pod("scheduling.report_run", deadline)
        except BaseException:
            print(log.read_text(errors="replace")[-4000:])
            raise
        finally:
            stop(process)
            forget_queue(f"runtimed.{pod}")
    assert (running["uid"], running["attempt"], running["phase"]) == (run_uid, 1, "Running")
    assert (done["phase"], done["exitCode"], done["reason"]) == ("Succeeded", 0, "")
    assert done["podName"] == pod and done["podUID"] == pod_uid
    assert done["startTime"] and done["completionTime"]
    assert (workspace / "out.txt").read_text() == "hello redis\n"
    assert process.returncode == 0, log.read_text(errors="replace")[-4000:]
