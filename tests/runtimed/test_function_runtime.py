"""Function mode (``executor.v1.FunctionRuntime``) of the built-in bash and Python servers, driven
through stubs generated from ``runtime.proto`` against a real gRPC server on a unix socket:
every rule of docs/runtime-server.md "Function mode" — registration fencing by attempt, digest
and id, one call in flight, timeouts and cancels that kill the call's processes, bounded input
and output, drain versus cancel on unregister, and bash payloads that are never shell source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest

from runtimed.runtime_client import FunctionClient
from runtimed.runtime_host import RuntimeHost
from runtimed.runtime_server import runtime_pb2 as pb
from runtimed.runtime_server import runtime_pb2_grpc as pb_grpc
from runtimed.runtime_server.functions import FunctionError, LocalContext
from runtimed.runtime_server.server import serve
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "a" * 64
OTHER_DIGEST = "sha256:" + "b" * 64
READY = pb.FUNCTION_REGISTRATION_STATE_READY
FAILED = pb.FUNCTION_REGISTRATION_STATE_FAILED

APP = """
import os, pathlib, time
pathlib.Path("imports").open("a").write(f"{os.getpid()}\\n")
calls = 0

def handle(request):
    global calls
    calls += 1
    print("a print from the handler")
    if isinstance(request, bytes):
        return request[::-1]
    if request == "unencodable":
        return {1, 2}
    if isinstance(request, dict):
        if request.get("sleep"):
            time.sleep(request["sleep"])
        if request.get("fail"):
            raise ValueError(request["fail"])
        if "big" in request:
            return "x" * request["big"]
        if "outputs" in request:
            return {"outputs": request["outputs"]}
    return {"echo": request, "pid": os.getpid(), "calls": calls, "env": os.environ.get("GREETING")}
"""

BASH = """
echo "sourced" >&2
handle() {
  printf '%s' "$1"
  echo "to stderr" >&2
}
fail() { echo "it broke" >&2; return 4; }
slow() { sleep 300 & echo $! > child.pid; sleep 300; }
big() { head -c 1100000 /dev/zero; }
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def code_of(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as failed:
        call()
    return failed.value.code()


@pytest.fixture
def workdir(tmp_path) -> Path:
    path = tmp_path / "fn"
    path.mkdir()
    (path / "app.py").write_text(APP)
    (path / "broken.py").write_text("1 / 0\n")
    (path / "handler.sh").write_text(BASH)
    return path


def _served(tmp_path, runtime):
    address = f"unix:{tmp_path}/{runtime}.sock"
    server, servicer = serve(runtime, address, tmp_path / f"{runtime}-state")
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=20)
    return server, servicer, channel


@pytest.fixture
def python_stub(tmp_path):
    server, servicer, channel = _served(tmp_path, "python")
    try:
        yield pb_grpc.FunctionRuntimeStub(channel)
    finally:
        channel.close()
        servicer.cancel_all()
        server.stop(grace=1).wait()


@pytest.fixture
def bash_stub(tmp_path):
    server, servicer, channel = _served(tmp_path, "bash")
    try:
        yield pb_grpc.FunctionRuntimeStub(channel)
    finally:
        channel.close()
        servicer.cancel_all()
        server.stop(grace=1).wait()


def register(stub, workdir, handler="app.handle", uid="run-1", attempt=1, digest=DIGEST, **fields):
    env = {"PATH": os.environ["PATH"], "GREETING": "hello", **fields.pop("env", {})}
    request = pb.RegisterFunctionRequest(
        run_uid=uid,
        registration_attempt=attempt,
        working_dir=str(workdir),
        handler=handler,
        env=env,
        registration_digest=digest,
        **fields,
    )
    return stub.RegisterFunction(request)


def invoke(stub, ref, value=None, raw: bytes | None = None, **fields):
    data = raw if raw is not None else json.dumps(value).encode()
    return stub.InvokeFunction(pb.InvokeFunctionRequest(registration=ref, input=data, **fields))


def status(stub, ref):
    return stub.FunctionStatus(pb.FunctionStatusRequest(registration=ref))


def unregister(stub, ref, **fields):
    return stub.UnregisterFunction(pb.UnregisterFunctionRequest(registration=ref, **fields))


def in_background(call):
    """Run ``call`` in a thread; returns a function that joins it and gives its result or
    the gRPC status code it failed with."""
    found = {}

    def run():
        try:
            found["value"] = call()
        except grpc.RpcError as exc:
            found["value"] = exc.code()

    thread = threading.Thread(target=run)
    thread.start()

    def result(timeout=30):
        thread.join(timeout)
        assert not thread.is_alive()
        return found["value"]

    return result


def test_python_register_invoke_status_and_warm_state(python_stub, workdir):
    registered = register(python_stub, workdir)
    assert registered.state == READY
    ref = registered.registration
    assert ref.run_uid == "run-1"
    assert ref.registration_id and len(ref.registration_id.encode()) <= 128
    first = invoke(python_stub, ref, {"a": [1, 2]}, invocation_id="trace-1")
    assert first.invocation_id == "trace-1"
    assert first.content_type == "application/json"
    body = json.loads(first.output)
    assert (body["echo"], body["calls"], body["env"]) == ({"a": [1, 2]}, 1, "hello")
    second = invoke(python_stub, ref, "again")
    assert second.invocation_id  # one is made when the caller gives none
    assert json.loads(second.output)["calls"] == 2  # the worker stays warm between calls
    assert json.loads(second.output)["pid"] == body["pid"]
    assert len((workdir / "imports").read_text().split()) == 1  # imported once
    # handler prints go to the registration's log, not into the frames
    log = workdir.parent / "python-state" / f"function-{ref.registration_id}.log"
    assert log.read_text().count("a print from the handler") == 2


def test_a_caller_that_goes_away_kills_its_call(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    pid = json.loads(invoke(python_stub, ref, 0).output)["pid"]
    request = pb.InvokeFunctionRequest(registration=ref, input=b'{"sleep": 60}')
    call = python_stub.InvokeFunction.future(request)
    assert wait_until(lambda: status(python_stub, ref).in_flight == 1, 10, 0.01)
    call.cancel()
    assert wait_until(lambda: not alive(pid), 10, 0.05)
    assert wait_until(lambda: status(python_stub, ref).in_flight == 0, 10, 0.05)
    assert json.loads(invoke(python_stub, ref, 1).output)["pid"] != pid


def test_same_attempt_and_digest_is_the_same_registration_not_reinitialised(python_stub, workdir):
    first = register(python_stub, workdir)
    again = register(python_stub, workdir)
    assert again.registration == first.registration
    assert again.state == READY
    assert len((workdir / "imports").read_text().split()) == 1
    conflict = code_of(lambda: register(python_stub, workdir, digest=OTHER_DIGEST))
    assert conflict == grpc.StatusCode.ALREADY_EXISTS
    assert status(python_stub, first.registration).state == READY  # not replaced


def test_higher_attempt_supersedes_and_stale_ids_are_refused_everywhere(python_stub, workdir):
    old = register(python_stub, workdir).registration
    old_pid = json.loads(invoke(python_stub, old, 1).output)["pid"]
    new = register(python_stub, workdir, attempt=2, digest=OTHER_DIGEST)
    assert new.state == READY
    assert new.registration.registration_id != old.registration_id
    assert wait_until(lambda: not alive(old_pid), 10, 0.05), "the old worker outlived it"
    stale = grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(lambda: status(python_stub, old)) == stale
    assert code_of(lambda: invoke(python_stub, old, 1)) == stale
    assert code_of(lambda: unregister(python_stub, old, cancel_in_flight=True)) == stale
    assert code_of(lambda: register(python_stub, workdir, attempt=1)) == stale
    # the stale calls changed nothing
    assert json.loads(invoke(python_stub, new.registration, 2).output)["echo"] == 2


def test_a_registration_superseded_while_it_imports_leaves_nothing(python_stub, workdir):
    (workdir / "slow.py").write_text(
        "import os, time\nopen('slow.pid', 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
        "def handle(request):\n    return request\n"
    )
    first = in_background(lambda: register(python_stub, workdir, handler="slow.handle"))
    pid_file = workdir / "slow.pid"
    # the file exists a moment before its pid is written
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 20, 0.05)
    importing = int((workdir / "slow.pid").read_text())
    newer = register(python_stub, workdir, attempt=2, digest=OTHER_DIGEST)
    assert newer.state == READY
    assert first().state != READY
    assert wait_until(lambda: not alive(importing), 10, 0.05), "the superseded import lives on"
    assert json.loads(invoke(python_stub, newer.registration, 5).output)["echo"] == 5


def test_a_worker_that_died_between_calls_is_replaced(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    pid = json.loads(invoke(python_stub, ref, 0).output)["pid"]
    os.kill(pid, 9)
    assert wait_until(lambda: not alive(pid), 10, 0.05)
    assert json.loads(invoke(python_stub, ref, 1).output)["pid"] != pid


def test_unknown_run_is_not_found_and_absent_unregister_succeeds(python_stub, workdir):
    ghost = pb.FunctionRegistration(run_uid="nobody", registration_id="reg_x")
    assert code_of(lambda: status(python_stub, ghost)) == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: invoke(python_stub, ghost, 1)) == grpc.StatusCode.NOT_FOUND
    assert unregister(python_stub, ghost).registration == ghost
    ref = register(python_stub, workdir).registration
    unregister(python_stub, ref)
    assert code_of(lambda: status(python_stub, ref)) == grpc.StatusCode.NOT_FOUND
    unregister(python_stub, ref)  # again: absent, fine
    # an unregistered generation does not come back: a new one needs a higher attempt
    assert code_of(lambda: register(python_stub, workdir)) == grpc.StatusCode.FAILED_PRECONDITION
    assert register(python_stub, workdir, attempt=2).state == READY


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("handler", "nodot"),
        ("handler", "app.not-a-name"),
        ("handler", "1app.handle"),
        ("working_dir", "relative/dir"),
        ("working_dir", "/no/such/dir"),
        ("registration_attempt", 0),
        ("registration_digest", ""),
        ("registration_digest", "sha256:" + "A" * 64),
        ("run_uid", ""),
        ("idle_timeout_seconds", -1),
    ],
)
def test_invalid_registrations(python_stub, workdir, field, value):
    fields = {
        "run_uid": "run-1",
        "registration_attempt": 1,
        "working_dir": str(workdir),
        "handler": "app.handle",
        "registration_digest": DIGEST,
        field: value,
    }
    request = pb.RegisterFunctionRequest(**fields)
    assert (
        code_of(lambda: python_stub.RegisterFunction(request)) == grpc.StatusCode.INVALID_ARGUMENT
    )


@pytest.mark.parametrize(("handler", "why"), [("broken.handle", "ZeroDivisionError"),
                                              ("app.missing", "has no attribute 'missing'"),
                                              ("absent.handle", "No module named 'absent'")])  # fmt: skip
def test_python_init_failure_is_failed_with_a_bounded_fatal_error(
    python_stub, workdir, handler, why
):
    registered = register(python_stub, workdir, handler=handler)
    assert registered.state == FAILED
    found = status(python_stub, registered.registration)
    assert found.state == FAILED
    assert why in found.fatal_error
    assert len(found.fatal_error.encode()) <= 4096
    refused = code_of(lambda: invoke(python_stub, registered.registration, 1))
    assert refused == grpc.StatusCode.FAILED_PRECONDITION
    unregister(python_stub, registered.registration)


def test_one_call_in_flight_and_last_activity(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    quiet = status(python_stub, ref)
    assert (quiet.in_flight, quiet.last_activity_unix_nano) == (0, 0)
    before = time.time_ns()
    slow = in_background(lambda: invoke(python_stub, ref, {"sleep": 1.0}))
    assert wait_until(lambda: status(python_stub, ref).in_flight == 1, 10, 0.01)
    during = status(python_stub, ref).last_activity_unix_nano
    assert during >= before  # a call in flight is activity
    busy = code_of(lambda: invoke(python_stub, ref, 1))
    assert busy == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert json.loads(slow().output)["echo"] == {"sleep": 1.0}
    after = status(python_stub, ref)
    assert after.in_flight == 0
    assert after.last_activity_unix_nano > during  # the end of a call is activity too
    assert invoke(python_stub, ref, 2).output  # free again


def test_python_timeout_kills_the_worker_and_the_registration_recovers(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    pid = json.loads(invoke(python_stub, ref, 0).output)["pid"]
    started = time.monotonic()
    timed_out = code_of(lambda: invoke(python_stub, ref, {"sleep": 30}, timeout_millis=300))
    assert timed_out == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 10
    assert wait_until(lambda: not alive(pid), 10, 0.05)
    assert status(python_stub, ref).state == READY  # one call's failure, not the function's
    fresh = json.loads(invoke(python_stub, ref, 1).output)
    assert fresh["pid"] != pid and fresh["calls"] == 1


def test_handler_exception_fails_the_call_only(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    with pytest.raises(grpc.RpcError) as raised:
        invoke(python_stub, ref, {"fail": "boom"})
    assert raised.value.code() == grpc.StatusCode.UNKNOWN
    assert "ValueError: boom" in raised.value.details()
    assert status(python_stub, ref).state == READY
    assert json.loads(invoke(python_stub, ref, 1).output)["calls"] == 2  # same warm worker


def test_input_output_and_outputs_limits(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: invoke(python_stub, ref, raw=b"1" * (1024 * 1024 + 1))) == invalid
    assert code_of(lambda: invoke(python_stub, ref, raw=b"{not json")) == invalid
    assert code_of(lambda: invoke(python_stub, ref, 1, invocation_id="i" * 129)) == invalid
    assert code_of(lambda: invoke(python_stub, ref, 1, timeout_millis=-1)) == invalid
    # up to the limits passes
    assert len(invoke(python_stub, ref, {"big": 1024 * 1024 - 2}).output) == 1024 * 1024
    assert len(invoke(python_stub, ref, raw=b" " * (1024 * 1024 - 1) + b"1").output) > 0
    with pytest.raises(grpc.RpcError) as large:
        invoke(python_stub, ref, {"big": 1024 * 1024})
    assert large.value.code() == grpc.StatusCode.INTERNAL
    assert "1048576" in large.value.details()
    good = invoke(python_stub, ref, {"outputs": {"answer": "42", "k.v-1": "x y"}})
    assert dict(good.outputs) == {"answer": "42", "k.v-1": "x y"}
    too_many = {f"k{index}": "v" for index in range(65)}
    too_long = {"k": "v" * 8193}
    for outputs in (too_many, too_long):
        with pytest.raises(grpc.RpcError) as refused:
            invoke(python_stub, ref, {"outputs": outputs})
        assert refused.value.code() == grpc.StatusCode.INTERNAL
        assert "outputs" in refused.value.details()
    # bytes in, bytes out: another content type reaches the handler as bytes
    raw = invoke(python_stub, ref, raw=b"\x00\x01", content_type="application/octet-stream")
    assert (raw.output, raw.content_type) == (b"\x01\x00", "application/octet-stream")
    with pytest.raises(grpc.RpcError) as unencodable:
        invoke(python_stub, ref, "unencodable")
    assert unencodable.value.code() == grpc.StatusCode.UNKNOWN
    assert "not JSON: TypeError" in unencodable.value.details()
    assert status(python_stub, ref).state == READY


def test_unregister_drains_the_call_in_flight(python_stub, workdir):
    ref = register(python_stub, workdir).registration
    slow = in_background(lambda: invoke(python_stub, ref, {"sleep": 1.0}))
    assert wait_until(lambda: status(python_stub, ref).in_flight == 1, 10, 0.01)
    done = in_background(lambda: unregister(python_stub, ref, drain_timeout_millis=20000))
    assert wait_until(
        lambda: status(python_stub, ref).state == pb.FUNCTION_REGISTRATION_STATE_DRAINING,
        10,
        0.01,
    )
    assert code_of(lambda: invoke(python_stub, ref, 1)) == grpc.StatusCode.FAILED_PRECONDITION
    assert json.loads(slow().output)["echo"] == {"sleep": 1.0}  # it finished
    assert done().registration == ref
    assert code_of(lambda: status(python_stub, ref)) == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("how", [{"cancel_in_flight": True}, {"drain_timeout_millis": 200}])
def test_unregister_cancels_the_call_in_flight(python_stub, workdir, how):
    ref = register(python_stub, workdir).registration
    pid = json.loads(invoke(python_stub, ref, 0).output)["pid"]
    slow = in_background(lambda: invoke(python_stub, ref, {"sleep": 60}))
    assert wait_until(lambda: status(python_stub, ref).in_flight == 1, 10, 0.01)
    started = time.monotonic()
    unregister(python_stub, ref, **how)
    assert slow() == grpc.StatusCode.CANCELLED
    assert time.monotonic() - started < 10
    assert wait_until(lambda: not alive(pid), 10, 0.05)
    assert code_of(lambda: status(python_stub, ref)) == grpc.StatusCode.NOT_FOUND


def test_bash_payload_is_one_argument_never_shell_source(bash_stub, workdir):
    ref = register(bash_stub, workdir, handler="handler.handle").registration
    assert status(bash_stub, ref).state == READY
    for payload in (b"$(touch pwned)", b"`touch pwned`; touch pwned", b'{"a": "b c"}\n\n'):
        answered = invoke(bash_stub, ref, raw=payload)
        assert answered.output == payload  # stdout only; stderr went to the log
    assert not (workdir / "pwned").exists()
    with pytest.raises(grpc.RpcError) as failed:
        invoke(bash_stub, register(bash_stub, workdir, "handler.fail", "run-2").registration, 1)
    assert failed.value.code() == grpc.StatusCode.UNKNOWN
    assert "exited with 4" in failed.value.details() and "it broke" in failed.value.details()
    big = register(bash_stub, workdir, "handler.big", "run-3").registration
    assert code_of(lambda: invoke(bash_stub, big, 1)) == grpc.StatusCode.INTERNAL
    assert status(bash_stub, big).state == READY


def test_bash_timeout_kills_the_call_tree(bash_stub, workdir):
    ref = register(bash_stub, workdir, handler="handler.slow").registration
    timed_out = code_of(lambda: invoke(bash_stub, ref, 1, timeout_millis=500))
    assert timed_out == grpc.StatusCode.DEADLINE_EXCEEDED
    assert wait_until(lambda: (workdir / "child.pid").exists(), 5, 0.05)
    assert wait_until(lambda: not alive(int((workdir / "child.pid").read_text())), 10, 0.05)
    assert status(bash_stub, ref).state == READY


@pytest.mark.parametrize(
    ("handler", "why"),
    [("handler.missing", "does not define the function 'missing'"),
     ("nofile.handle", "nofile.sh is not a file")],
)  # fmt: skip
def test_bash_missing_function_or_file_is_failed(bash_stub, workdir, handler, why):
    registered = register(bash_stub, workdir, handler=handler)
    assert registered.state == FAILED
    assert why in status(bash_stub, registered.registration).fatal_error


@pytest.mark.parametrize("handler", ["../handler.handle", "/tmp/handler.handle", "a//b.f"])
def test_bash_handler_stays_under_the_working_dir(bash_stub, workdir, handler):
    assert code_of(lambda: register(bash_stub, workdir, handler=handler)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )


def test_function_client_and_the_server_program(tmp_path, workdir):
    """The real ``python -m runtimed.runtime_server python`` serves function mode; the client
    raises FunctionError carrying the status code."""
    socket = f"unix:{tmp_path}/server.sock"
    command = [sys.executable, "-m", "runtimed.runtime_server", "python", "--listen", socket]
    process = subprocess.Popen(command, cwd=ROOT)
    client = FunctionClient(socket)
    try:
        grpc.channel_ready_future(client.channel).result(timeout=20)
        env = {"PATH": os.environ["PATH"]}
        registered = client.register("run-9", 1, str(workdir), "app.handle", DIGEST, env)
        ref = registered.registration
        assert json.loads(client.invoke(ref, b'"hi"').output)["echo"] == "hi"
        assert client.status(ref).state == READY
        with pytest.raises(FunctionError) as busy:
            client.register("run-9", 1, str(workdir), "app.handle", OTHER_DIGEST)
        assert busy.value.code == grpc.StatusCode.ALREADY_EXISTS
        client.unregister(ref, cancel_in_flight=True)
        with pytest.raises(FunctionError) as gone:
            client.status(ref)
        assert gone.value.code == grpc.StatusCode.NOT_FOUND
    finally:
        client.close()
        process.terminate()
        process.wait(20)


def test_in_process_calls_raise_function_error(tmp_path, workdir):
    """The runtimed hosting a server calls the servicer directly."""
    host = RuntimeHost("python")
    functions = host.functions()
    assert functions is not None
    try:
        request = pb.RegisterFunctionRequest(
            run_uid="run-5",
            registration_attempt=1,
            working_dir=str(workdir),
            handler="app.handle",
            env={"PATH": os.environ["PATH"]},
            registration_digest=DIGEST,
        )
        ref = functions.register(request).registration
        call = pb.InvokeFunctionRequest(registration=ref, input=b"3")
        assert json.loads(functions.invoke(call).output)["echo"] == 3
        answered = functions.InvokeFunction(call, LocalContext())
        assert json.loads(answered.output)["calls"] == 2
        with pytest.raises(FunctionError) as stale:
            functions.status(pb.FunctionStatusRequest(registration=pb.FunctionRegistration(
                run_uid="run-5", registration_id="reg_old")))  # fmt: skip
        assert stale.value.code == grpc.StatusCode.FAILED_PRECONDITION
        pid = json.loads(functions.invoke(call).output)["pid"]
    finally:
        host.close()
    assert wait_until(lambda: not alive(pid), 10, 0.05), "the worker outlived its server"
