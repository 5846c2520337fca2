"""``python -m benchmarks.function_echo unix:/path``: the smallest FunctionRuntime server, one
that answers every invocation with its input (what ``bench invoke`` calls through the
gateway, so the figures are the gateway's and the dataplane's, not a handler's)."""

from __future__ import annotations

import sys
from concurrent import futures

import grpc

from runtimed.runtime_server import runtime_pb2, runtime_pb2_grpc


class Echo(runtime_pb2_grpc.FunctionRuntimeServicer):
    def InvokeFunction(self, request, context):  # noqa: N802 - the gRPC method's name
        return runtime_pb2.InvokeFunctionResponse(
            registration=request.registration,
            invocation_id=request.invocation_id,
            output=request.input,
            content_type=request.content_type,
        )


def serve(address: str) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    runtime_pb2_grpc.add_FunctionRuntimeServicer_to_server(Echo(), server)
    server.add_insecure_port(address)
    server.start()
    return server


if __name__ == "__main__":
    serve(sys.argv[1]).wait_for_termination()
