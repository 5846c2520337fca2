"""A third-party Runtime Server in a few dozen lines: ``executor.v1.Runtime`` (the contract in
docs/runtime-server.md) serving ``sh <entrypoint> <args…>`` (a Run's staged source), or ``sh -c "<args joined by
newlines>"`` without an entrypoint, each execution in its own
process group, killed on Cancel, at its timeout, and when the server stops.

    python examples/custom-runtime/server.py unix:/tmp/custom.sock
"""

import os
import signal
import subprocess
import sys
import threading
from concurrent import futures

import grpc

from runtimed.runtime_server import runtime_pb2 as pb
from runtimed.runtime_server import runtime_pb2_grpc as pb_grpc

S = pb.ExecutionState


class Shell(pb_grpc.RuntimeServicer):
    def __init__(self):
        self.runs = {}  # id -> [state, exit_code, output, message, process]

    def Execute(self, request, context):
        if request.id in self.runs:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, "id in use")
        argv = ["sh", "-c", "\n".join(request.args)]
        if request.entrypoint:
            argv = ["sh", request.entrypoint, *request.args]
        env = {**request.env, "CUSTOM_RUNTIME_SERVER": "sh-example"}  # a server may add to it
        process = subprocess.Popen(
            argv,
            cwd=request.working_dir or None,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        run = self.runs[request.id] = [S.EXECUTION_STATE_RUNNING, 0, "", "", process]
        threading.Thread(target=self.wait, args=(run, request.timeout_seconds or None)).start()
        return pb.ExecuteResponse(id=request.id)

    def wait(self, run, timeout):
        try:
            output, _ = run[4].communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run[4].pid, signal.SIGKILL)
            output, _ = run[4].communicate()
            run[3] = f"timed out after {timeout}s"
        run[1], run[2] = run[4].returncode, output.decode(errors="replace")[-65536:]
        run[0] = S.EXECUTION_STATE_SUCCEEDED if run[1] == 0 else S.EXECUTION_STATE_FAILED

    def status(self, id, context):
        if id not in self.runs:
            context.abort(grpc.StatusCode.NOT_FOUND, "no such execution")
        state, code, output, message, _ = self.runs[id]
        return pb.StatusResponse(
            id=id, state=state, exit_code=max(code, 0), stdout=output, error_message=message
        )

    def Status(self, request, context):
        return self.status(request.id, context)

    def List(self, request, context):
        return pb.ListResponse(entries=[self.status(id, context) for id in list(self.runs)])

    def Cancel(self, request, context):
        self.status(request.id, context)
        if self.runs[request.id][0] == S.EXECUTION_STATE_RUNNING:
            os.killpg(self.runs[request.id][4].pid, signal.SIGKILL)
        return pb.CancelResponse()

    def Forget(self, request, context):
        if self.status(request.id, context).state == S.EXECUTION_STATE_RUNNING:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "cancel it first")
        del self.runs[request.id]
        return pb.ForgetResponse()

    def Health(self, request, context):
        return pb.HealthResponse(healthy=True, message="custom sh runtime")


if __name__ == "__main__":
    shell = Shell()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_RuntimeServicer_to_server(shell, server)
    server.add_insecure_port(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9091")
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop(0))
    server.wait_for_termination()
    for run in shell.runs.values():  # nothing outlives the server
        if run[0] == S.EXECUTION_STATE_RUNNING:
            os.killpg(run[4].pid, signal.SIGKILL)
