"""``bench watch``: N watches on one web process (uvicorn serving ``portal.asgi``, as ``manage.py
up``'s web workers do), M writes through the store, and how the changes reach the watchers.

Each watch is a real HTTP/1.1 connection (``GET .../configmaps?watch=true&resourceVersion=R``
with a bearer token) read by an asyncio client in this process; the writes are ConfigMap
creates in a fresh namespace, each timed at its commit. Figures: delivery latency (commit to
the event line arriving at a watcher) p50/p99 over every (watcher, write), events lost
(expected N*M minus delivered: must be 0), duplicates, and the web process's memory per watch
(its RSS growth while the watches are open, over N).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class WatchBenchOptions:
    watchers: int
    writes: int
    namespace: str = "bench-watch"
    rate: float = 50.0  # writes per second
    startup_timeout: float = 60.0
    settle_timeout: float = 30.0


@dataclass
class Tally:
    arrivals: dict[str, list[float]] = field(default_factory=dict)  # name -> arrival times
    duplicates: int = 0
    errors: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def superuser_token(username: str = "bench-watch") -> str:
    """The API token of superuser ``username`` (made if missing) in the configured database."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user, _ = get_user_model().objects.get_or_create(
        username=username, defaults={"is_superuser": True, "is_staff": True}
    )
    if not user.is_superuser:
        user.is_superuser = True
        user.save(update_fields=["is_superuser"])
    token, _ = Token.objects.get_or_create(user=user)
    return str(token.key)


def _fresh_namespace(name: str) -> None:
    from portal.models import ConfigMap, Namespace

    ConfigMap.objects.filter(namespace=name).delete()
    Namespace.objects.get_or_create(name=name, defaults={"spec": {"finalizers": []}})


def _server(port: int, log_path: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "KRUNTIMES_MAX_WATCHES": "100000",
        "KRUNTIMES_MAX_WATCHES_PER_USER": "100000",
    }
    log = open(log_path, "ab")  # noqa: SIM115 - the child keeps it
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "portal.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
        "--backlog",
        "4096",
    ]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


async def _watch(
    port: int, path: str, token: str, tally: Tally, opened: asyncio.Event, counter: list[int]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            "Accept: application/json\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        tally.errors.append(status.decode(errors="replace").strip())
        writer.close()
        return
    chunked = False
    while True:  # headers
        line = await reader.readline()
        if line.lower().startswith(b"transfer-encoding: chunked"):
            chunked = True
        if line in (b"\r\n", b""):
            break
    counter[0] += 1
    if counter[0] >= counter[1]:
        opened.set()
    seen: set[str] = set()
    try:
        while True:
            if chunked:
                size_line = await reader.readline()
                if not size_line:
                    return
                size = int(size_line.strip() or b"0", 16)
                if size == 0:
                    return
                data = await reader.readexactly(size + 2)
                payloads = data[:-2].splitlines()
            else:
                payload = await reader.readline()
                if not payload:
                    return
                payloads = [payload]
            now = time.time()
            for payload in payloads:
                # the client must not be what is measured: find the name, parse nothing
                if not payload.startswith(b'{"type":"ADDED"'):
                    continue
                start = payload.find(b'"name":"w-')
                if start < 0:
                    continue
                name = payload[start + 8 : payload.index(b'"', start + 8)].decode()
                if name in seen:
                    tally.duplicates += 1
                    continue
                seen.add(name)
                tally.arrivals.setdefault(name, []).append(now)
    except (asyncio.IncompleteReadError, ConnectionError):
        return
    finally:
        writer.close()


def _warm_up(port: int, token: str, namespace: str) -> None:
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/namespaces/{namespace}/configmaps",
        headers={"Authorization": f"Bearer {token}"},
    )
    for _ in range(3):
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()


def _write_all(options: WatchBenchOptions, log: Callable[[str], None]) -> dict[str, float]:
    from portal.auth.identities import LOCAL_OPERATOR
    from portal.machinery import store
    from portal.machinery.admission import WriteContext
    from portal.machinery.registry import registry

    kind = registry.get("", "v1", "configmaps")
    context = WriteContext(user=LOCAL_OPERATOR)
    committed: dict[str, float] = {}
    gap = 1.0 / options.rate if options.rate > 0 else 0.0
    for index in range(options.writes):
        name = f"w-{index:06d}"
        manifest = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"index": str(index)},
        }
        store.create(kind, manifest, namespace=options.namespace, context=context)
        committed[name] = time.time()
        if gap:
            time.sleep(gap)
    log(f"bench watch: {options.writes} writes done")
    return committed


def _write_in_a_child(options: WatchBenchOptions, log: Callable[[str], None]) -> dict[str, float]:
    """The writes from a process of their own, so they do not hold this one's GIL while it
    timestamps arrivals; returns each write's commit time."""
    import multiprocessing

    from django.db import connections

    connections.close_all()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        send.send(_write_all(options, log))

    process = context.Process(target=child)
    process.start()
    committed = receive.recv()
    process.join()
    return dict(committed)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_watch_bench(options: WatchBenchOptions, log: Callable[[str], None]) -> dict[str, Any]:
    from portal.machinery import history

    _fresh_namespace(options.namespace)
    token = superuser_token()
    port = free_port()
    log_dir = Path(settings.DATA_DIR) / "bench-watch"
    log_dir.mkdir(parents=True, exist_ok=True)
    server = _server(port, log_dir / "web.log")
    try:
        deadline = time.monotonic() + options.startup_timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(
                        f"the web process did not start (see {log_dir}/web.log)"
                    ) from None
                time.sleep(0.2)
        _warm_up(port, token, options.namespace)  # Django loads its apps on the first request
        rss_before = _rss_kib(server.pid)
        since = history.current()
        path = (
            f"/api/v1/namespaces/{options.namespace}/configmaps?watch=true"
            f"&resourceVersion={since}&timeoutSeconds=3600"
        )
        tally = Tally()
        result: dict[str, Any] = {}

        async def main() -> None:
            opened = asyncio.Event()
            counter = [0, options.watchers]
            tasks = [
                asyncio.create_task(_watch(port, path, token, tally, opened, counter))
                for _ in range(options.watchers)
            ]
            try:
                await asyncio.wait_for(opened.wait(), options.startup_timeout)
            except TimeoutError:
                raise RuntimeError(
                    f"only {counter[0]} of {options.watchers} watches opened: {tally.errors[:3]}"
                ) from None
            log(f"bench watch: {options.watchers} watches open")
            await asyncio.sleep(1.0)
            result["rss_open_kib"] = _rss_kib(server.pid)
            committed = await asyncio.to_thread(_write_in_a_child, options, log)
            expected = options.watchers * options.writes
            settle = time.monotonic() + options.settle_timeout
            while time.monotonic() < settle:
                if sum(len(v) for v in tally.arrivals.values()) >= expected:
                    break
                await asyncio.sleep(0.1)
            result["committed"] = committed
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:  # the clients on the fast loop too, so they add as little as they can
            import uvloop

            uvloop.run(main())
        except ImportError:
            asyncio.run(main())
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    committed = result["committed"]
    latencies = [
        (arrival - committed[name]) * 1000
        for name, arrivals in tally.arrivals.items()
        if name in committed
        for arrival in arrivals
    ]
    delivered = len(latencies)
    expected = options.watchers * options.writes
    return {
        "watchers": options.watchers,
        "writes": options.writes,
        "write_rate_per_s": options.rate,
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "delivered": delivered,
        "events_lost": expected - delivered,
        "duplicates": tally.duplicates,
        "p50_ms": round(_percentile(latencies, 0.50), 2),
        "p99_ms": round(_percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies, default=0.0), 2),
        "memory_per_watcher_kib": round(
            (result["rss_open_kib"] - rss_before) / max(1, options.watchers), 1
        ),
        "web_rss_mib": round(result["rss_open_kib"] / 1024, 1),
        "errors": tally.errors[:5],
    }
