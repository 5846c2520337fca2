"""A function attempt's life in runtimed (``runtimed.functions``) and the dataplane the gateway
calls (``runtimed.dataplane``), against a real gRPC FunctionRuntime server on a unix socket:
a small scripted one, so each of the Runtime Server's answers can be chosen.
"""

from __future__ import annotations

import threading
import time
from concurrent import futures
from datetime import UTC, datetime

import grpc
import pytest

from runtimed import dataplane
from runtimed.execute import CANCELLED, FAILED, TIMEOUT, StepControl
from runtimed.functions import FunctionTable, Registration, Serve, Stats
from runtimed.protocol import (
    MAX_INVOKE_BYTES,
    Reason,
)
from runtimed.runtime_server import runtime_pb2 as pb
from runtimed.runtime_server import runtime_pb2_grpc as pb_grpc
from tests.helpers.dataplane import DataplaneClient, DataplaneError

KEY = "k" * 64
POD_UID = "pod-uid-1"


class Scripted(pb_grpc.FunctionRuntimeServicer):
    """Registers anything; the test sets what FunctionStatus and InvokeFunction answer."""

    def __init__(self) -> None:
        self.registered: list[pb.RegisterFunctionRequest] = []
        self.unregistered: list[pb.UnregisterFunctionRequest] = []
        self.invoked: list[pb.InvokeFunctionRequest] = []
        self.state = pb.FUNCTION_REGISTRATION_STATE_READY
        self.register_code: grpc.StatusCode | None = None
        self.fatal = ""
        self.last_activity_ns = 0
        self.in_flight = 0
        self.invoke_code: grpc.StatusCode | None = None

    def RegisterFunction(self, request, context):  # noqa: N802
        if self.register_code is not None:
            context.abort(self.register_code, "refused")
        self.registered.append(request)
        registration = pb.FunctionRegistration(run_uid=request.run_uid, registration_id="reg_1")
        return pb.RegisterFunctionResponse(registration=registration, state=self.state)

    def FunctionStatus(self, request, context):  # noqa: N802
        return pb.FunctionStatusResponse(
            registration=request.registration,
            state=self.state,
            in_flight=self.in_flight,
            last_activity_unix_nano=self.last_activity_ns,
            fatal_error=self.fatal,
        )

    def InvokeFunction(self, request, context):  # noqa: N802
        self.invoked.append(request)
        if self.invoke_code is not None:
            context.abort(self.invoke_code, "the handler is busy")
        return pb.InvokeFunctionResponse(
            registration=request.registration,
            invocation_id=request.invocation_id,
            output=b'{"echo": ' + request.input + b"}",
            content_type="application/json",
        )

    def UnregisterFunction(self, request, context):  # noqa: N802
        self.unregistered.append(request)
        return pb.UnregisterFunctionResponse(registration=request.registration)


@pytest.fixture
def server(tmp_path):
    scripted = Scripted()
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_FunctionRuntimeServicer_to_server(scripted, grpc_server)
    address = f"unix:{tmp_path}/fn.sock"
    grpc_server.add_insecure_port(address)
    grpc_server.start()
    channel = grpc.insecure_channel(address)
    yield scripted, pb_grpc.FunctionRuntimeStub(channel)
    channel.close()
    grpc_server.stop(0)


def now() -> datetime:
    return datetime.now(UTC)


def registration(**overrides) -> Registration:
    values = {
        "uid": "uid-1",
        "attempt": 2,
        "working_dir": "/tmp",
        "handler": "app.invoke",
        "env": {"A": "1"},
        "idle_timeout_seconds": None,
        "digest": "sha256:" + "0" * 64,
        "timeout_seconds": None,
    }
    values.update(overrides)
    return Registration(**values)


class Served:
    """A Serve running on a thread, as the Celery task runs it."""

    def __init__(self, stub, spec: Registration, table: FunctionTable | None = None) -> None:
        self.table = table or FunctionTable()
        self.control = StepControl()
        self.ready = threading.Event()
        self.serve = Serve(
            spec,
            stub,
            self.table,
            self.control,
            now,
            self.ready.set,
            watch_seconds=0.01,
            status_seconds=0.02,
        )
        self.result = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.result = self.serve.run(now())

    def join(self, seconds: float = 10.0):
        self.thread.join(seconds)
        assert not self.thread.is_alive(), "the function attempt did not end"
        return self.result


def test_registers_with_the_attempt_and_serves_until_cancelled(server):
    scripted, stub = server
    served = Served(stub, registration())
    assert served.ready.wait(5)
    request = scripted.registered[0]
    assert (request.run_uid, request.registration_attempt) == ("uid-1", 2)
    assert request.handler == "app.invoke" and request.env == {"A": "1"}
    assert served.table.get("uid-1") is not None  # the dataplane finds it now
    served.control.cancel()
    result = served.join()
    assert (result.phase, result.reason) == (CANCELLED, Reason.CANCELLED)
    assert served.table.get("uid-1") is None
    assert scripted.unregistered[0].registration.registration_id == "reg_1"
    assert scripted.unregistered[0].cancel_in_flight is True


def test_pod_shutdown_ends_the_attempt_pod_terminating(server):
    _, stub = server
    served = Served(stub, registration())
    assert served.ready.wait(5)
    served.control.terminate()
    result = served.join()
    assert (result.phase, result.reason) == (FAILED, Reason.POD_TERMINATING)


def test_idle_timeout_counts_from_the_last_activity_the_server_reports(server):
    scripted, stub = server
    scripted.last_activity_ns = time.time_ns()  # just now: not idle yet
    served = Served(stub, registration(idle_timeout_seconds=1))
    assert served.ready.wait(5)
    time.sleep(0.5)
    assert served.thread.is_alive()
    result = served.join()
    assert (result.phase, result.reason) == (TIMEOUT, Reason.IDLE_TIMEOUT)
    assert "idleTimeoutSeconds" in result.message
    assert scripted.unregistered[0].cancel_in_flight is False  # idle: nothing to cancel


def test_an_invocation_in_flight_keeps_an_idle_function_alive(server):
    scripted, stub = server
    scripted.in_flight = 1
    served = Served(stub, registration(idle_timeout_seconds=1))
    assert served.ready.wait(5)
    time.sleep(1.3)
    assert served.thread.is_alive()
    scripted.in_flight = 0
    result = served.join()
    assert result.reason == Reason.IDLE_TIMEOUT


def test_spec_timeout_is_the_reservation_lifetime(server):
    _, stub = server
    served = Served(stub, registration(timeout_seconds=0.3))
    assert served.ready.wait(5)
    result = served.join()
    assert (result.phase, result.reason) == (TIMEOUT, Reason.TIMEOUT)


def test_a_registration_the_server_fails_later_ends_runtime_error(server):
    scripted, stub = server
    served = Served(stub, registration())
    assert served.ready.wait(5)
    scripted.state = pb.FUNCTION_REGISTRATION_STATE_FAILED
    scripted.fatal = "the worker died"
    result = served.join()
    assert (result.phase, result.reason) == (FAILED, Reason.RUNTIME_ERROR)
    assert "the worker died" in result.message


def test_a_function_the_server_cannot_load_is_prepare_source(server):
    scripted, stub = server
    scripted.state = pb.FUNCTION_REGISTRATION_STATE_FAILED
    scripted.fatal = "ModuleNotFoundError: No module named 'app'"
    served = Served(stub, registration())
    result = served.join()
    assert not served.ready.is_set()
    assert (result.phase, result.reason) == (FAILED, Reason.PREPARE_SOURCE)
    assert "No module named 'app'" in result.message


def test_a_server_without_function_runtime_is_prepare_source(server):
    scripted, stub = server
    scripted.register_code = grpc.StatusCode.UNIMPLEMENTED
    result = Served(stub, registration()).join()
    assert (result.phase, result.reason) == (FAILED, Reason.PREPARE_SOURCE)
    assert "does not serve functions" in result.message


def test_an_unreachable_server_is_runtime_error_so_the_retry_policy_applies(tmp_path):
    channel = grpc.insecure_channel(f"unix:{tmp_path}/nobody.sock")
    stub = pb_grpc.FunctionRuntimeStub(channel)
    import runtimed.functions as functions

    original = functions.REGISTER_TIMEOUT_SECONDS
    functions.REGISTER_TIMEOUT_SECONDS = 0.5
    try:
        result = Served(stub, registration()).join()
    finally:
        functions.REGISTER_TIMEOUT_SECONDS = original
        channel.close()
    assert (result.phase, result.reason) == (FAILED, Reason.RUNTIME_ERROR)


# ------------------------------------------------------------------ the dataplane


@pytest.fixture
def plane(server, tmp_path):
    scripted, stub = server
    table = FunctionTable()
    address = f"unix:{tmp_path}/dp.sock"
    listener = dataplane.serve(address, table, KEY, POD_UID)
    client = DataplaneClient(address)
    yield scripted, stub, table, client
    client.close()
    listener.stop()


def serve_in(table: FunctionTable, stub, uid: str = "uid-1", attempt: int = 2):
    from runtimed.functions import Serving

    serving = Serving(
        uid,
        attempt,
        pb.FunctionRegistration(run_uid=uid, registration_id="reg_1"),
        stub,
        Stats(now()),
        None,
    )
    table.add(serving)
    return serving


def invoke(client, *, key=KEY, attempt=2, pod=POD_UID, uid="uid-1", data=b"1", **fields):
    request = pb.InvokeFunctionRequest(
        registration=pb.FunctionRegistration(run_uid=uid),
        input=data,
        content_type="application/json",
        **fields,
    )
    return client.invoke(request, key=key, attempt=attempt, pod_uid=pod)


def test_the_dataplane_forwards_with_runtimeds_registration_and_counts(plane):
    scripted, stub, table, client = plane
    serving = serve_in(table, stub)
    response = invoke(client, invocation_id="inv-7", data=b'{"x": 1}')
    assert response.output == b'{"echo": {"x": 1}}'
    assert response.invocation_id == "inv-7"
    forwarded = scripted.invoked[0]
    assert forwarded.registration.registration_id == "reg_1"  # runtimed's, not the caller's
    assert 0 < forwarded.timeout_millis <= 900_000
    stats = serving.stats.snapshot()
    assert (stats["invocations"], stats["errors"]) == (1, 0)
    assert stats["perSecond"] > 0


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"key": "wrong"}, grpc.StatusCode.UNAUTHENTICATED),
        ({"key": ""}, grpc.StatusCode.UNAUTHENTICATED),
        ({"attempt": 1}, grpc.StatusCode.FAILED_PRECONDITION),
        ({"pod": "another-incarnation"}, grpc.StatusCode.FAILED_PRECONDITION),
        ({"uid": "uid-unknown"}, grpc.StatusCode.NOT_FOUND),
        ({"invocation_id": "x" * 129}, grpc.StatusCode.INVALID_ARGUMENT),
        ({"data": b"x" * (MAX_INVOKE_BYTES + 1)}, grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
def test_the_dataplane_refuses_what_it_must_not_serve(plane, change, code):
    scripted, stub, table, client = plane
    serve_in(table, stub)
    with pytest.raises(DataplaneError) as raised:
        invoke(client, **change)
    assert raised.value.code() == code
    assert scripted.invoked == []  # nothing reached the Runtime Server


def test_the_runtime_servers_refusal_goes_back_as_is_and_is_counted(plane):
    scripted, stub, table, client = plane
    serving = serve_in(table, stub)
    scripted.invoke_code = grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(DataplaneError) as raised:
        invoke(client)
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    stats = serving.stats.snapshot()
    assert (stats["invocations"], stats["errors"]) == (1, 1)
    assert stats["recentErrors"] == ["RESOURCE_EXHAUSTED: the handler is busy"]


def test_a_function_that_ended_is_not_found_at_once(plane):
    _, stub, table, client = plane
    serve_in(table, stub)
    table.remove("uid-1", 2)
    with pytest.raises(DataplaneError) as raised:
        invoke(client)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND


def test_removing_an_older_attempt_keeps_the_newer_registration():
    table = FunctionTable()
    serve_in(table, None, attempt=3)
    table.remove("uid-1", 2)
    assert table.get("uid-1").attempt == 3


def test_stats_stay_bounded():
    stats = Stats(now())
    for index in range(50):
        stats.record(f"error {index} " + "x" * 1000)
    snapshot = stats.snapshot()
    assert snapshot["errors"] == 50
    assert len(snapshot["recentErrors"]) == 5
    assert snapshot["recentErrors"][-1].startswith("error 49")
    assert all(len(text) <= 256 for text in snapshot["recentErrors"])


def test_the_rate_counts_only_the_last_minute():
    stats = Stats(now())
    for _ in range(120):
        stats.record(now=1000.0)
    assert stats.per_second(now=1000.5) == 2.0
    assert stats.per_second(now=1061.0) == 0.0


def test_a_garbled_frame_ends_the_connection_and_the_dataplane_keeps_serving(plane):
    import socket

    from runtimed.protocol import length_prefix

    _, stub, table, client = plane
    serve_in(table, stub)
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(client.socket.getpeername())
    raw.sendall(length_prefix(b"\x09garbage"))  # an unknown version
    assert raw.recv(16) == b""  # closed, nothing answered
    raw.close()
    huge = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    huge.connect(client.socket.getpeername())
    huge.sendall((64 << 20).to_bytes(4, "big"))  # announces 64 MiB
    assert huge.recv(16) == b""
    huge.close()
    assert invoke(client).output == b'{"echo": 1}'


def test_the_dataplane_listens_on_every_interface_for_a_pod_ip():
    assert dataplane.listen_address("10.0.0.5:9092") == "[::]:9092"
    assert dataplane.listen_address("unix:/tmp/x.sock") == "unix:/tmp/x.sock"
