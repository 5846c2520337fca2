"""The Runtime Server contract (``executor.v1.Runtime`` and the function mode's
``executor.v1.FunctionRuntime``, wire-compatible with kruntimes) and the built-in bash and Python
Runtime Servers. The rules a server keeps are in docs/runtime-server.md.

``runtime_pb2*`` are generated from ``runtime.proto`` by ``make protos``; never edit them.
"""
