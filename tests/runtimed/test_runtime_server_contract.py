"""The Runtime Server contract, driven the way runtimed and kruntimes' runtimed drive it: through
stubs generated from ``runtimed/runtime_server/runtime.proto`` (same package, service, messages
and field numbers as kruntimes'), against real server processes on a unix socket: the built-in
bash and Python servers and the custom example (examples/custom-runtime/server.py).

Execute → Status → List → Cancel → Forget → Health, plus the rules of docs/runtime-server.md
that runtimed's guarantees rest on: the process tree dies on Cancel and at the timeout, a
running execution cannot be forgotten, ids are unique, the output kept is bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from runtimed.runtime_server import runtime_pb2 as pb
from runtimed.runtime_server import runtime_pb2_grpc as pb_grpc
from runtimed.runtime_server.server import OUTPUT_TAIL_BYTES
from tests.helpers.protos import without_json_names
from tests.helpers.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
CUSTOM = ROOT / "examples/custom-runtime/server.py"
SERVERS = {
    "bash": [sys.executable, "-m", "runtimed.runtime_server", "bash", "--listen"],
    "python": [sys.executable, "-m", "runtimed.runtime_server", "python", "--listen"],
    "custom": [sys.executable, str(CUSTOM)],
}
# one program per server: print a line, then the variable GREETING
HELLO = {
    "bash": ['echo hello; echo "$GREETING"'],
    "python": ["import os; print('hello'); print(os.environ['GREETING'])"],
    "custom": ["echo hello", 'echo "$GREETING"'],
}
EXIT_3 = {"bash": ["exit 3"], "python": ["raise SystemExit(3)"], "custom": ["exit 3"]}


def sleeper(kind: str, pid_file: Path) -> list[str]:
    """A step that starts a child in a session of its own (escaping the step's process group),
    writes the child's pid, then sleeps: the tree must still die."""
    if kind == "python":
        return [
            "import subprocess, time\n"
            "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "time.sleep(300)\n"
        ]
    # the custom example kills its process group only (its docstring says so)
    escape = "" if kind == "custom" else "setsid "
    return [f"{escape}sleep 300 & echo $! > {pid_file}; sleep 300"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(params=sorted(SERVERS))
def server(request, tmp_path):
    kind = request.param
    socket = f"unix:{tmp_path}/runtime.sock"
    process = subprocess.Popen([*SERVERS[kind], socket], cwd=ROOT)
    channel = grpc.insecure_channel(socket)
    try:
        grpc.channel_ready_future(channel).result(timeout=20)
        yield kind, pb_grpc.RuntimeStub(channel)
    finally:
        channel.close()
        process.terminate()
        process.wait(20)


def final(stub, id: str, timeout: float = 20.0) -> pb.StatusResponse:
    ended = (pb.EXECUTION_STATE_SUCCEEDED, pb.EXECUTION_STATE_FAILED)
    assert wait_until(lambda: stub.Status(pb.StatusRequest(id=id)).state in ended, timeout, 0.05)
    return stub.Status(pb.StatusRequest(id=id))


def execute(stub, id: str, args: list[str], cwd: Path, **fields) -> None:
    env = {"GREETING": "hi there", "PATH": os.environ["PATH"]}
    stub.Execute(pb.ExecuteRequest(id=id, args=args, env=env, working_dir=str(cwd), **fields))


@pytest.mark.processes
def test_execute_status_list_forget_health(server, tmp_path):
    kind, stub = server
    assert stub.Health(pb.HealthRequest()).healthy
    execute(stub, "hello", HELLO[kind], tmp_path)
    status = final(stub, "hello")
    assert status.state == pb.EXECUTION_STATE_SUCCEEDED
    assert status.exit_code == 0
    assert status.stdout.splitlines()[-2:] == ["hello", "hi there"]
    execute(stub, "three", EXIT_3[kind], tmp_path)
    failed = final(stub, "three")
    assert (failed.state, failed.exit_code) == (pb.EXECUTION_STATE_FAILED, 3)
    assert {entry.id for entry in stub.List(pb.ListRequest()).entries} == {"hello", "three"}
    with pytest.raises(grpc.RpcError) as taken:
        execute(stub, "hello", HELLO[kind], tmp_path)
    assert taken.value.code() == grpc.StatusCode.ALREADY_EXISTS
    stub.Forget(pb.ForgetRequest(id="hello"))
    with pytest.raises(grpc.RpcError) as gone:
        stub.Status(pb.StatusRequest(id="hello"))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    assert [entry.id for entry in stub.List(pb.ListRequest()).entries] == ["three"]


@pytest.mark.processes
def test_cancel_kills_the_tree_and_only_then_forget(server, tmp_path):
    kind, stub = server
    pid_file = tmp_path / "child.pid"
    execute(stub, "long", sleeper(kind, pid_file), tmp_path)
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 20, 0.05)
    child = int(pid_file.read_text())
    assert stub.Status(pb.StatusRequest(id="long")).state == pb.EXECUTION_STATE_RUNNING
    with pytest.raises(grpc.RpcError) as running:
        stub.Forget(pb.ForgetRequest(id="long"))
    assert running.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    stub.Cancel(pb.CancelRequest(id="long"))
    assert final(stub, "long").state == pb.EXECUTION_STATE_FAILED
    assert wait_until(lambda: not alive(child), 10, 0.05), "the step's tree outlived it"
    stub.Forget(pb.ForgetRequest(id="long"))


@pytest.mark.processes
@pytest.mark.parametrize("server", ["bash", "python"], indirect=True)
def test_timeout_kills_the_tree_and_output_is_bounded(server, tmp_path):
    kind, stub = server
    pid_file = tmp_path / "child.pid"
    execute(stub, "slow", sleeper(kind, pid_file), tmp_path, timeout_seconds=1)
    status = final(stub, "slow")
    assert status.state == pb.EXECUTION_STATE_FAILED
    assert "did not finish within 1s" in status.error_message
    assert wait_until(lambda: not alive(int(pid_file.read_text())), 10, 0.05)
    big = {"bash": ["head -c 300000 /dev/zero | tr '\\0' x"], "python": ["print('x' * 300000)"]}
    execute(stub, "big", big[kind], tmp_path)
    assert len(final(stub, "big").stdout) == OUTPUT_TAIL_BYTES


@pytest.mark.processes
@pytest.mark.parametrize("server", ["bash", "python"], indirect=True)
def test_entrypoint_file_runs_with_args(server, tmp_path):
    kind, stub = server
    name = {"bash": "script", "python": "main.py"}[kind]
    body = {"bash": 'echo "args: $*"', "python": "import sys; print('args:', *sys.argv[1:])"}
    (tmp_path / name).write_text(body[kind] + "\n")
    execute(stub, "file", ["a", "b c"], tmp_path)
    assert final(stub, "file").stdout.strip() == "args: a b c"
    with pytest.raises(grpc.RpcError) as nothing:
        execute(stub, "none", [], tmp_path / "..", entrypoint="missing")
    assert nothing.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_stubs_are_compiled_from_the_committed_proto(tmp_path):
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    source = "runtimed/runtime_server/runtime.proto"
    out = tmp_path / "set.pb"
    assert protoc.main(["protoc", f"-I{ROOT}", f"--descriptor_set_out={out}", source]) == 0
    (compiled,) = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    without_json_names(compiled.message_type)
    committed = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    assert committed == compiled, "runtime.proto changed: run make protos"
    assert compiled.package == "executor.v1"
    assert [s.name for s in compiled.service] == ["Runtime", "FunctionRuntime"]
    assert pb_grpc.RuntimeStub  # the gRPC module is generated beside it
    assert (ROOT / "runtimed/runtime_server/runtime_pb2.pyi").exists()
