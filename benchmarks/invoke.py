"""``manage.py bench invoke``: warm function invocations through the gateway, beside a bare
in-process call of the same handler.

1. Preflight (database migrated, broker answering), a fresh namespace with one python Runtime
   Pod whose ``runs`` capacity holds C function Runs at once.
2. The control worker, beat, the web server (``up``'s command line, HTTPS with the data
   directory's CA; the gateway is part of it) and the pod start.
3. Ready: C function Runs are created one after the other through the API (a superuser's Bearer
   token), each timed from its POST to phase ``Ready`` (the pod is warm: it is running already).
4. C=1: one client, one keep-alive HTTPS connection, ``count`` invocations of the first
   function (after a warm-up); then C clients, each with its own connection and function,
   ``count`` invocations in all. Every answer is checked (status 200 and the handler's JSON).
5. Bare: the handler called in this process ``count`` times (what a call costs without any
   sandbox, network or gateway).
6. The functions are deleted (their slots come back) and everything stops.

One JSON line on stdout; progress on stderr.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from scheduling.models import Run, RunPhase

from . import workload as namespaces
from .measure import percentile
from .runs import (
    BenchError,
    Log,
    bench_token,
    delete_bench_user,
    preflight,
    settle,
    wait_for_pods,
)
from .stack import Stack

RUNTIME = "bench"  # the name the shared bench helpers look for
API = "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs"
HANDLER_SOURCE = "def invoke(request):\n    return {'ok': True, 'n': request.get('n')}\n"


@dataclass
class InvokeOptions:
    count: int = 2000
    concurrency: int = 16
    namespace: str = "bench-invoke"
    warmup: int | None = None
    ready_timeout: float = 30.0
    startup_timeout: float = 120.0
    web_workers: int = 2
    keep: bool = False
    control_argv: list[str] = field(default_factory=list)
    beat_argv: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.count < 1 or self.concurrency < 1:
            raise ValueError("--count and --concurrency must be at least 1")
        if self.warmup is None:
            self.warmup = min(500, max(50, self.count // 10))
        if self.warmup < 0:
            raise ValueError("--warmup must not be negative")


class Client:
    """One keep-alive HTTPS connection to the portal, as an SDK client holds one."""

    def __init__(self, base: str, token: str, ca_file: str) -> None:
        parts = urlsplit(base)
        context = ssl.create_default_context(cafile=ca_file)
        self.connection = http.client.HTTPSConnection(
            parts.hostname or "127.0.0.1", parts.port or 443, context=context, timeout=30
        )
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        self.connection.request(method, path, body=body, headers=self.headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.connection.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def runtime_manifest(capacity: int) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": RUNTIME},
        "spec": {
            "template": {"spec": {"containers": [{"name": "runtime", "image": "runtime-python"}]}},
            "replicas": 1,
            "capacity": {"resources": {"runs": capacity}},
        },
    }


def function_manifest(name: str) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "metadata": {"name": name},
        "spec": {
            "runtime": RUNTIME,
            "source": {"inline": HANDLER_SOURCE, "inlinePath": "app.py"},
            "mode": {"function": {"handler": "app.invoke"}},
        },
    }


def create_namespace(namespace: str, capacity: int) -> None:
    from portal.machinery import store

    namespaces.delete_namespace(namespace)
    store.create(
        namespaces._kind("", "v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        context=namespaces.OPERATOR,
    )
    store.create(
        namespaces._kind("kruntimes.io", "v1alpha1", "runtimes"),
        runtime_manifest(capacity),
        namespace=namespace,
        context=namespaces.OPERATOR,
    )


def wait_web(client: Client, stack: Stack, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        stack.check_alive()
        try:
            status, _ = client.request("GET", "/version")
            if status == 200:
                return
        except OSError:
            client.connection.close()
        if time.monotonic() > deadline:
            raise BenchError(f"the web server did not answer within {timeout:g} s")
        time.sleep(0.1)


def create_ready(client: Client, namespace: str, name: str, timeout: float) -> tuple[str, float]:
    """Create a function Run; its endpoint path and the seconds from the POST to Ready."""
    started = time.perf_counter()
    status, body = client.request(
        "POST", API.format(namespace=namespace), json.dumps(function_manifest(name)).encode()
    )
    if status != 201:
        raise BenchError(f"creating function Run {name} answered {status}: {body[:300]!r}")
    deadline = time.monotonic() + timeout
    while True:
        run = Run.objects.filter(namespace=namespace, name=name).only("phase", "status").first()
        if run is not None and run.phase == RunPhase.READY:
            seconds = time.perf_counter() - started
            endpoint = (run.status or {}).get("endpoint") or {}
            if not endpoint.get("url"):
                raise BenchError(f"function Run {name} is Ready without an endpoint")
            return urlsplit(endpoint["url"]).path, seconds
        if run is not None and run.is_terminal:
            raise BenchError(f"function Run {name} ended {run.phase}: {run.status.get('message')}")
        if time.monotonic() > deadline:
            raise BenchError(f"function Run {name} was not Ready within {timeout:g} s")
        time.sleep(0.002)


def release(client: Client, namespace: str, count: int, timeout: float) -> float:
    """Delete the function Runs; ms until every one unregistered and its row went (the
    function-cleanup finalizer released: its slot is free)."""
    started = time.perf_counter()
    for index in range(count):
        status, body = client.request("DELETE", f"{API.format(namespace=namespace)}/fn-{index:03d}")
        if status not in (200, 202):
            raise BenchError(f"deleting fn-{index:03d} answered {status}: {body[:200]!r}")
    deadline = time.monotonic() + timeout
    while Run.objects.filter(namespace=namespace).exists():
        if time.monotonic() > deadline:
            raise BenchError(f"function Runs were still there {timeout:g} s after their delete")
        time.sleep(0.005)
    return (time.perf_counter() - started) * 1000


@dataclass
class Series:
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0

    def line(self) -> dict:
        ms = [s * 1000 for s in self.seconds]
        return {
            "count": len(self.seconds),
            "errors": len(self.errors),
            "p50_ms": round(percentile(ms, 0.5), 3) if ms else None,
            "p99_ms": round(percentile(ms, 0.99), 3) if ms else None,
            "per_second": round(len(self.seconds) / self.wall, 1) if self.wall else 0.0,
        }


def invoke_many(client: Client, path: str, count: int, series: Series, lock: threading.Lock):
    seconds, errors = [], []
    for index in range(count):
        body = json.dumps({"n": index}).encode()
        started = time.perf_counter()
        try:
            status, answer = client.request("POST", path, body)
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            client.connection.close()
            continue
        elapsed = time.perf_counter() - started
        if status != 200 or json.loads(answer) != {"ok": True, "n": index}:
            errors.append(f"{status}: {answer[:200]!r}")
            continue
        seconds.append(elapsed)
    with lock:
        series.seconds += seconds
        series.errors += errors


def measure(clients: list[Client], paths: list[str], count: int) -> Series:
    series, lock = Series(), threading.Lock()
    share = [
        count // len(clients) + (1 if i < count % len(clients) else 0) for i in range(len(clients))
    ]
    threads = [
        threading.Thread(target=invoke_many, args=(c, p, n, series, lock), daemon=True)
        for c, p, n in zip(clients, paths, share, strict=True)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    series.wall = time.perf_counter() - started
    return series


def bare(count: int) -> float:
    """Microseconds per in-process call of the same handler (JSON in and out, as the
    sandbox's worker does)."""
    scope: dict = {}
    exec(compile(HANDLER_SOURCE, "app.py", "exec"), scope)  # noqa: S102 - the bench's own code
    handler = scope["invoke"]
    started = time.perf_counter()
    for index in range(count):
        json.dumps(handler(json.loads(json.dumps({"n": index}))))
    return (time.perf_counter() - started) / count * 1e6


def run_invoke_bench(
    options: InvokeOptions, *, log: Log = lambda _: None, abort: threading.Event | None = None
) -> dict:
    from portal import tls
    from portal.management.commands.up import web_command

    preflight()
    stack = Stack(Path(settings.DATA_DIR) / "bench-invoke" / "logs")
    namespace, concurrency = options.namespace, options.concurrency
    port = free_port()
    files = tls.ensure_server_cert(tls.data_dir_paths(), tls.server_hosts("127.0.0.1"))
    ca_file = str(tls.data_dir_paths().ca_cert)
    base = f"https://127.0.0.1:{port}"
    os.environ["KRUNTIMES_GATEWAY_URL"] = base  # the control worker publishes endpoints there
    os.environ["KRUNTIMES_GATEWAY_CA_FILE"] = ca_file
    clients: list[Client] = []
    try:
        create_namespace(namespace, concurrency + 1)
        token = bench_token()
        stack.start("control-worker", options.control_argv)
        if options.beat_argv:
            stack.start("beat", options.beat_argv)
        stack.start("web", web_command(port, "127.0.0.1", workers=options.web_workers, tls=files))
        stack.start_pods(namespace, RUNTIME, 1)
        log(f"started the control worker, the web server ({base}) and a python Runtime Pod")
        wait_for_pods(stack, namespace, 1, options.startup_timeout, log)
        settle(stack, namespace, log, seconds=1.0)
        clients = [Client(base, token, ca_file) for _ in range(concurrency)]
        wait_web(clients[0], stack, options.startup_timeout)
        paths, ready = [], []
        for index in range(concurrency):
            path, seconds = create_ready(
                clients[0], namespace, f"fn-{index:03d}", options.ready_timeout
            )
            paths.append(path)
            ready.append(seconds * 1000)
        log(
            f"{concurrency} function Runs Ready: p50 {percentile(ready, 0.5):.1f} ms, "
            f"max {max(ready):.1f} ms after their POST"
        )
        if options.warmup:
            measure(clients, paths, options.warmup * concurrency)
        stack.check_alive()
        one = measure(clients[:1], paths[:1], options.count)
        log(f"C=1: {json.dumps(one.line())}")
        many = measure(clients, paths, options.count)
        log(f"C={concurrency}: {json.dumps(many.line())}")
        for errors in (one.errors, many.errors):
            for error in errors[:3]:
                log(f"  error: {error}")
        stack.check_alive()
        released = release(clients[0], namespace, concurrency, options.ready_timeout)
        log(f"{concurrency} function Runs deleted, their slots back after {released:.0f} ms")
        bare_us = bare(options.count)
        return {
            "bench": "invoke",
            "concurrency": concurrency,
            "ready_p50_ms": round(percentile(ready, 0.5), 1),
            "ready_max_ms": round(max(ready), 1),
            "c1": one.line(),
            f"c{concurrency}": many.line(),
            "released_ms": round(released, 1),
            "bare_call_us": round(bare_us, 2),
            "errors": len(one.errors) + len(many.errors),
        }
    finally:
        for client in clients:
            client.close()
        stopped = stack.stop()
        log(f"stopped everything in {stopped:.1f} s")
        if not options.keep:
            namespaces.delete_namespace(namespace)
            delete_bench_user()
