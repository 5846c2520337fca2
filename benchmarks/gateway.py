"""``bench gateway``: what the function gateway adds to a warm invocation.

The server is ``manage.py up``'s web command (gunicorn with uvicorn workers serving
``portal.asgi``) on a free port; the Run's "runtimed" is ``benchmarks.function_echo`` on a unix
socket (a FunctionRuntime server that answers with the input). In a fresh namespace the bench
makes a Runtime Pod whose dataplane is that socket and a function Run Ready on it, then:

- ``count`` invocations one after another on one keep-alive connection (p50/p99/max, and the
  rate that gives);
- ``count`` invocations from ``concurrency`` threads, a keep-alive connection each (invokes/s,
  p50/p99 under that load);
- the same ``count`` sequential calls straight to the echo server over gRPC from this process
  (``bare_p50_ms``): what the gateway adds is the difference.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from .measure import percentile

Log = Callable[[str], None]
NAMESPACE = "bench-invoke"
BODY = b'{"prompt":"hello","n":1}'


class InvokeBenchError(RuntimeError):
    """The bench could not set up or reach its server."""


def run_invoke_bench(count: int, concurrency: int, log: Log, workers: int = 1) -> dict[str, Any]:
    from portal.management.commands.up import web_command

    from .stack import Stack
    from .watch import free_port

    stack = Stack(Path(settings.DATA_DIR) / "bench-invoke" / "logs")
    directory = Path(tempfile.mkdtemp(prefix="bi", dir="/tmp"))
    address = f"unix:{directory}/dataplane.sock"
    try:
        stack.start("echo", [_python(), "-m", "benchmarks.function_echo", address])
        port = free_port()
        argv = [*web_command(port, "127.0.0.1", workers=workers), "--backlog", "4096"]
        where = argv.index("--access-logfile")
        del argv[where : where + 2]
        stack.start("web", argv)
        log(f"bench gateway: web on port {port}, {workers} workers; echo at {address}")
        token, path, run_uid = _prepare(address)
        _wait(port, stack)
        for _ in range(200):  # warm: token, decision, route, channel
            _check(_invoke(_connect(port), path, token))
        sequential = _sequential(port, path, token, count)
        concurrent, elapsed = _concurrent(port, path, token, count, concurrency)
        bare = _bare(address, run_uid, count)
        return {
            "count": count,
            "concurrency": concurrency,
            "web_workers": workers,
            "p50_ms": _ms(percentile(sequential, 0.5)),
            "p99_ms": _ms(percentile(sequential, 0.99)),
            "max_ms": _ms(max(sequential)),
            "sequential_invokes_per_s": round(len(sequential) / sum(sequential), 1),
            f"c{concurrency}_invokes_per_s": round(count / elapsed, 1),
            f"c{concurrency}_p50_ms": _ms(percentile(concurrent, 0.5)),
            f"c{concurrency}_p99_ms": _ms(percentile(concurrent, 0.99)),
            "bare_grpc_p50_ms": _ms(percentile(bare, 0.5)),
            "bare_grpc_p99_ms": _ms(percentile(bare, 0.99)),
        }
    finally:
        stack.stop()


def _python() -> str:
    import sys

    return sys.executable


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _prepare(address: str) -> tuple[str, str, str]:
    """A Ready function Run on a pod whose dataplane is ``address``: (token, path, run uid)."""
    from portal.auth.identities import LOCAL_OPERATOR
    from portal.machinery import store
    from portal.machinery.admission import WriteContext
    from portal.machinery.registry import registry
    from portal.models import Namespace
    from scheduling import run_status
    from scheduling.models import Run, RuntimePod

    from .watch import superuser_token

    Namespace.objects.get_or_create(name=NAMESPACE, defaults={"spec": {"finalizers": []}})
    pod, _ = RuntimePod.objects.update_or_create(
        namespace=NAMESPACE,
        name="echo-0",
        defaults={"runtime": "python", "phase": "Running", "ready": True},
    )
    RuntimePod.objects.filter(pk=pod.pk).update(dataplane_address=address)
    kind = registry.for_model(Run)
    assert kind is not None
    Run.objects.filter(namespace=NAMESPACE, name="echo").delete()
    store.create(
        kind,
        {
            "metadata": {"name": "echo", "namespace": NAMESPACE},
            "spec": {
                "runtime": "python",
                "source": {
                    "inline": "def invoke(event):\n    return event\n",
                    "inlinePath": "app.py",
                },
                "mode": {"function": {"handler": "app.invoke"}},
            },
        },
        context=WriteContext(user=LOCAL_OPERATOR),
        namespace=NAMESPACE,
    )
    run = Run.objects.get(namespace=NAMESPACE, name="echo")
    ready = {"phase": "Ready", "assignedPod": pod.name, "assignedPodUID": str(pod.uid)}
    if not run_status.write(run, {**(run.status or {}), **ready, "attempt": 1}):
        raise InvokeBenchError("the bench's Run changed while it was made Ready")
    path = f"/v1/namespaces/{NAMESPACE}/runs/echo/{run.uid}/invoke"
    return superuser_token("bench-invoke"), path, str(run.uid)


def _wait(port: int, stack: Any, timeout: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            stack.check_alive()
            if time.monotonic() > deadline:
                raise InvokeBenchError(
                    f"the web server did not answer in {timeout:.0f} s"
                ) from None
            time.sleep(0.2)


def _connect(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def _invoke(connection: http.client.HTTPConnection, path: str, token: str) -> tuple[int, bytes]:
    connection.request(
        "POST",
        path,
        body=BODY,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = connection.getresponse()
    return response.status, response.read()


def _check(answer: tuple[int, bytes]) -> None:
    status, body = answer
    if status != 200 or body != BODY:
        raise InvokeBenchError(f"an invocation answered {status}: {body[:300]!r}")


def _sequential(port: int, path: str, token: str, count: int) -> list[float]:
    connection = _connect(port)
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        answer = _invoke(connection, path, token)
        samples.append(time.perf_counter() - started)
        _check(answer)
    connection.close()
    return samples


def _concurrent(
    port: int, path: str, token: str, count: int, concurrency: int
) -> tuple[list[float], float]:
    samples: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    share = [
        count // concurrency + (1 if i < count % concurrency else 0) for i in range(concurrency)
    ]
    start = threading.Barrier(concurrency + 1)

    def client(calls: int) -> None:
        connection = _connect(port)
        mine = []
        start.wait()
        try:
            for _ in range(calls):
                began = time.perf_counter()
                answer = _invoke(connection, path, token)
                mine.append(time.perf_counter() - began)
                _check(answer)
        except Exception as exc:  # noqa: BLE001 - reported in the result
            errors.append(str(exc))
        with lock:
            samples.extend(mine)

    threads = [threading.Thread(target=client, args=(calls,)) for calls in share]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise InvokeBenchError(f"{len(errors)} clients failed: {errors[0]}")
    return samples, elapsed


def _bare(address: str, run_uid: str, count: int) -> list[float]:
    import grpc

    from runtimed.runtime_server import runtime_pb2, runtime_pb2_grpc

    samples = []
    with grpc.insecure_channel(address) as channel:
        stub = runtime_pb2_grpc.FunctionRuntimeStub(channel)
        request = runtime_pb2.InvokeFunctionRequest(
            registration=runtime_pb2.FunctionRegistration(run_uid=run_uid),
            input=BODY,
            content_type="application/json",
        )
        for _ in range(count):
            started = time.perf_counter()
            stub.InvokeFunction(request, timeout=30)
            samples.append(time.perf_counter() - started)
    return samples


def main_json(count: int, concurrency: int, log: Log, workers: int = 1) -> str:
    return json.dumps(run_invoke_bench(count, concurrency, log, workers))
