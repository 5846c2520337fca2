"""A function Run through runtimed's real RunService: the built-in Python and bash Runtime
Servers it hosts, the dataplane on a unix socket, the reports the control plane gets, and the
heartbeat's figures. The test plays the control plane and the gateway."""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid

import grpc
import pytest

from runtimed import dataplane
from runtimed.heartbeat import heartbeat_message
from runtimed.runtime_server import runtime_pb2 as pb
from runtimed.tasks import RunService
from tests.helpers.dataplane import DataplaneClient, DataplaneError
from tests.helpers.payloads import make_payload
from tests.helpers.waiting import wait_until

KEY = "dataplane-key"
PYTHON_SOURCE = "import os\n\ndef invoke(request):\n    return {'got': request, 'run': os.environ['KRUNTIME_RUN_NAME']}\n"
BASH_SOURCE = 'greet() {\n  printf \'{"hello": %s}\' "$1"\n}\n'


@pytest.fixture(params=["python", "bash"])
def served(request, config, reporter, clock, tmp_path):
    kind = request.param
    config = dataclasses.replace(
        config,
        runtime_server=kind,
        dataplane_address=f"unix:{tmp_path}/dp.sock",
        dataplane_key=KEY,
    )
    service = RunService(config, reporter, clock=clock, ship_logs=False)
    server = dataplane.serve(
        config.dataplane_address, service.active.functions, KEY, config.pod_uid
    )
    if kind == "python":
        source = {"inline": PYTHON_SOURCE, "inlinePath": "pkg/app.py"}
        handler = "pkg.app.invoke"
    else:
        source = {"inline": BASH_SOURCE, "inlinePath": "handler.sh"}
        handler = "handler.greet"
    uid = f"run-{uuid.uuid4().hex[:12]}"  # the pod's server is shared: one registration per uid
    payload = make_payload(
        uid=uid,
        source=source,
        mode={"function": {"handler": handler, "idleTimeoutSeconds": 30}},
        env=[{"name": "TEAM", "value": "a"}],
    )
    thread = threading.Thread(target=service.execute_run, args=(payload,), daemon=True)
    thread.start()
    client = DataplaneClient(config.dataplane_address)
    yield kind, service, reporter, Invoking(client, uid), payload, thread, config
    client.close()
    server.stop()


@dataclasses.dataclass
class Invoking:
    client: DataplaneClient
    uid: str


def invoke(invoking: Invoking, data: bytes, attempt: int = 1):
    client = invoking.client
    request = pb.InvokeFunctionRequest(
        registration=pb.FunctionRegistration(run_uid=invoking.uid),
        input=data,
        content_type="application/json",
        invocation_id="inv-1",
    )
    return client.invoke(request, key=KEY, attempt=attempt, pod_uid="uid-pod-a")


def phases(reporter) -> list[str]:
    return [report["phase"] for report in reporter.reports]


def test_a_function_run_is_ready_serves_invocations_and_ends_cancelled(served):
    kind, service, reporter, stub, payload, thread, config = served
    assert wait_until(lambda: "Ready" in phases(reporter), 30, 0.02), reporter.reports
    assert phases(reporter)[:2] == ["Running", "Ready"]
    ready = reporter.reports[1]
    assert ready["reason"] == "FunctionRegistered" and ready["startTime"]
    response = invoke(stub, b'{"n": 1}')
    if kind == "python":
        assert json.loads(response.output) == {"got": {"n": 1}, "run": "build"}
    else:
        assert json.loads(response.output) == {"hello": {"n": 1}}
    assert response.invocation_id == "inv-1"
    # a stale route (another attempt) never reaches it
    with pytest.raises(DataplaneError) as stale:
        invoke(stub, b"1", attempt=2)
    assert stale.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    beat = heartbeat_message(config, service.active, lambda: ready_clock())
    (active,) = beat["activeRuns"]
    # the refused route was no invocation
    assert (active["function"]["invocations"], active["function"]["errors"]) == (1, 0)
    assert beat["dataplane"] == config.dataplane_address
    service.cancel_run(payload)
    thread.join(20)
    assert not thread.is_alive()
    final = reporter.reports[-1]
    assert (final["phase"], final["reason"]) == ("Cancelled", "Cancelled")
    with pytest.raises(DataplaneError) as gone:
        invoke(stub, b"1")
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    # the slot is free: nothing of it is active any more
    assert service.active.snapshot() == []


def test_a_pod_shutting_down_ends_its_functions_at_once(served):
    _, service, reporter, client, payload, thread, _ = served
    assert wait_until(lambda: "Ready" in phases(reporter), 30, 0.02)
    assert service.terminate_functions() == 1
    thread.join(20)
    assert not thread.is_alive()
    final = reporter.reports[-1]
    assert (final["phase"], final["reason"]) == ("Failed", "PodTerminating")
    assert service.terminate_functions() == 0


def ready_clock():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_a_handler_the_server_cannot_find_fails_prepare_source(config, reporter, clock):
    config = dataclasses.replace(config, runtime_server="python")
    service = RunService(config, reporter, clock=clock, ship_logs=False)
    payload = make_payload(
        source={"inline": "def other(r):\n    return r\n", "inlinePath": "app.py"},
        mode={"function": {"handler": "app.invoke"}},
        uid="run-uid-2",  # the pod's server is shared by the tests: one registration per uid
    )
    final = service.execute_run(payload)
    assert (final["phase"], final["reason"]) == ("Failed", "PrepareSource")
    assert "invoke" in final["message"]
    assert "Ready" not in phases(reporter)
