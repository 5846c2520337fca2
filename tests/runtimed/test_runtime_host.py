"""runtimed executing through a Runtime Server it does not host: a command it starts beside it
(the custom example) or an address already listening (the runtime container in Kubernetes).
The step's output reaches the attempt's log masked and the log shipper; a cancel reaches the
server and ends the attempt Cancelled; a server that never comes up is runtimed's error."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest

from runtimed.execute import CANCELLED, SUCCEEDED, TIMEOUT, Step, StepControl, utc_now
from runtimed.runtime_host import RuntimeHost
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.processes
ROOT = Path(__file__).resolve().parents[2]
CUSTOM = (
    sys.executable,
    str(ROOT / "examples/custom-runtime/server.py"),
    "$(KRUNTIME_RUNTIME_ADDRESS)",
)


def step(tmp_path: Path, control: StepControl, shipped: list[bytes], timeout: float = 30.0) -> Step:
    return Step(
        ("runtime-server",),
        tmp_path,
        {"TOKEN": "s3cret", "PATH": "/usr/bin:/bin"},
        tmp_path / "attempt-1.log",
        timeout,
        on_output=shipped.append,
        control=control,
        masked=(b"s3cret",),
    )


@pytest.fixture
def custom_host():
    host = RuntimeHost(command=CUSTOM)
    yield host
    host.close()


def test_a_command_server_runs_the_step_and_its_output_is_masked_and_shipped(custom_host, tmp_path):
    shipped: list[bytes] = []
    args = ('echo "token is $TOKEN"; echo "served by $CUSTOM_RUNTIME_SERVER"',)
    result = custom_host.run(
        step(tmp_path, StepControl(), shipped), "", args, clock=utc_now, grace=1
    )
    assert result.phase == SUCCEEDED, result
    log = (tmp_path / "attempt-1.log").read_text()
    assert log == "token is ***\nserved by sh-example\n"
    assert b"".join(shipped).decode() == log


def test_a_cancel_reaches_the_command_server(custom_host, tmp_path):
    control = StepControl()
    ended = {}
    runner = threading.Thread(
        target=lambda: ended.update(
            result=custom_host.run(
                step(tmp_path, control, []), "", ("sleep 300",), clock=utc_now, grace=1
            )
        )
    )
    runner.start()
    assert wait_until(lambda: custom_host._client is not None, 30, 0.05)
    control.cancel(grace=1)
    runner.join(20)
    assert not runner.is_alive()
    assert ended["result"].phase == CANCELLED


def test_a_command_server_that_kills_at_the_timeout_ends_the_attempt_timeout(custom_host, tmp_path):
    slow = step(tmp_path, StepControl(), [], timeout=0.5)  # the wire rounds up to 1 s
    result = custom_host.run(slow, "", ("sleep 300",), clock=utc_now, grace=1)
    assert result.phase == TIMEOUT
    assert result.reason == "Timeout" and "within 1s" in result.message


def test_an_address_is_only_connected_to(tmp_path):
    socket = f"unix:{tmp_path}/rt.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "runtimed.runtime_server", "python", "--listen", socket], cwd=ROOT
    )
    host = RuntimeHost(address=socket)
    try:
        grpc.channel_ready_future(grpc.insecure_channel(socket)).result(timeout=20)
        shipped: list[bytes] = []
        args = ("import os; print(len(os.environ['TOKEN']))",)
        result = host.run(step(tmp_path, StepControl(), shipped), "", args, clock=utc_now, grace=1)
        assert result.phase == SUCCEEDED
        assert (tmp_path / "attempt-1.log").read_text() == "6\n"
    finally:
        host.close()
        server.terminate()
        server.wait(20)
    assert server.returncode is not None


def test_a_server_that_never_answers_is_runtimeds_error(tmp_path, monkeypatch):
    monkeypatch.setattr("runtimed.runtime_host.START_SECONDS", 1.0)
    host = RuntimeHost(command=(sys.executable, "-c", "import time; time.sleep(60)"))
    with pytest.raises(OSError, match="not healthy"):
        host.run(step(tmp_path, StepControl(), []), "", ("true",), clock=utc_now, grace=1)
    assert host._child is None
