"""``bench watch-open``: N watches opened at once, and what that does to everyone else.

The server is ``manage.py up``'s web command (gunicorn with uvicorn workers serving
``portal.asgi``) started by the bench on a free port, or a running one (``--url``, with
``--token`` or a token the bench makes in the configured database). In a namespace of
``--objects`` ConfigMaps, a prober process GETs one of them over and over (a fresh connection
each, so every web worker is sampled); after ``--baseline`` seconds this process opens N watches
of the namespace's ConfigMaps at once (``?watch=true`` without a version: each starts with the
initial list, as ``kubectl get -w`` and informers do). Once all are open it creates a marker
ConfigMap, which every watch must deliver (events_lost), and probes ``--after`` seconds more.

Figures: the prober's p50/p99/max latency before the watches, while they open, and once they
are open; the time until every watch's response started (open_all_s) and per watch
(open_p50_s/open_p99_s); events_lost; watches whose initial events were short.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from .http_clients import Target, Watch, open_watch, probe, wait_for_markers
from .measure import percentile

Log = Callable[[str], None]


class WatchOpenError(RuntimeError):
    """The bench could not set up or reach its server."""


@dataclass
class WatchOpenOptions:
    watches: int
    objects: int = 100
    namespace: str = "bench-watch-open"
    url: str = ""  # a running server; empty: the bench starts up's web command
    token: str = ""
    workers: int = 0  # the web workers of the server started (0: KRUNTIMES_WEB_WORKERS)
    openings: int | None = None  # KRUNTIMES_WATCH_OPENINGS of the server started
    baseline: float = 3.0  # seconds probed before the watches
    after: float = 2.0  # seconds probed once they are all open
    interval: float = 0.02  # the prober's pause between GETs
    startup_timeout: float = 60.0
    open_timeout: float = 120.0
    event_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.watches < 1 or self.objects < 1:
            raise ValueError("--watches and --objects must be at least 1")


def run_watch_open_bench(options: WatchOpenOptions, log: Log) -> dict[str, Any]:
    from .stack import Stack

    stack = None
    if options.url:
        target = Target(options.url.rstrip("/"), options.token or _token())
    else:
        stack = Stack(Path(settings.DATA_DIR) / "bench-watch-open" / "logs")
        target = _start_server(stack, options, log)
    try:
        _wait_ready(target, options.startup_timeout, stack)
        _prepare_namespace(target, options, log)
        return _measure(target, options, log)
    finally:
        if stack is not None:
            stack.stop()


def _token() -> str:
    from .watch import superuser_token

    return superuser_token("bench-watch-open")


def _start_server(stack: Any, options: WatchOpenOptions, log: Log) -> Target:
    from portal.management.commands.up import web_command

    from .watch import free_port

    port = free_port()
    workers = options.workers or settings.KRUNTIMES_WEB_WORKERS
    env = {}
    if options.openings is not None:
        env["KRUNTIMES_WATCH_OPENINGS"] = str(options.openings)
    argv = [*web_command(port, "127.0.0.1", workers=workers), "--backlog", "4096"]
    where = argv.index("--access-logfile")
    del argv[where : where + 2]  # no access log: thousands of lines per run
    stack.start("web", argv, env=env)
    log(f"bench watch-open: web on port {port}, {workers} workers")
    return Target(f"http://127.0.0.1:{port}", _token())


def _wait_ready(target: Target, timeout: float, stack: Any) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((target.host, target.port), timeout=1):
                break
        except OSError:
            if stack is not None:
                stack.check_alive()
            if time.monotonic() > deadline:
                raise WatchOpenError(f"{target.url} did not answer in {timeout:.0f} s") from None
            time.sleep(0.2)


def _prepare_namespace(target: Target, options: WatchOpenOptions, log: Log) -> None:
    """The namespace holds exactly cm-00000 .. cm-<objects-1> (leftovers deleted)."""
    ns = options.namespace
    status, _ = target.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    if status not in (201, 409):
        raise WatchOpenError(f"creating namespace {ns}: HTTP {status}")
    base = f"/api/v1/namespaces/{ns}/configmaps"
    status, listed = target.call("GET", base)
    if status != 200:
        raise WatchOpenError(f"listing {base}: HTTP {status}")
    wanted = {f"cm-{index:05d}" for index in range(options.objects)}
    present = {item["metadata"]["name"] for item in listed["items"]}
    for name in present - wanted:
        target.call("DELETE", f"{base}/{name}")
    for name in sorted(wanted - present):
        body = {"metadata": {"name": name}, "data": {"payload": "x" * 200}}
        status, _ = target.call("POST", base, body)
        if status not in (201, 409):
            raise WatchOpenError(f"creating ConfigMap {name}: HTTP {status}")
    log(f"bench watch-open: namespace {ns} holds {options.objects} ConfigMaps")


def _measure(target: Target, options: WatchOpenOptions, log: Log) -> dict[str, Any]:
    ns = options.namespace
    base = f"/api/v1/namespaces/{ns}/configmaps"
    for _ in range(4 * (options.workers or settings.KRUNTIMES_WEB_WORKERS)):
        target.call("GET", base)  # every web worker has answered once
    prober = _Prober(target, f"{base}/cm-00000", options.interval)
    marker = f"marker-{int(time.time() * 1000)}"
    watches = [Watch(marker=f'"name":"{marker}"'.encode()) for _ in range(options.watches)]
    path = f"{base}?watch=true&timeoutSeconds=3600"
    marks: dict[str, float] = {}

    async def scenario() -> None:
        await asyncio.sleep(options.baseline)
        marks["start"] = time.time()
        clock = time.monotonic()
        tasks = [asyncio.create_task(open_watch(target, path, w, clock)) for w in watches]
        deadline = clock + options.open_timeout
        while time.monotonic() < deadline:
            if all(w.opened is not None or w.error for w in watches):
                break
            await asyncio.sleep(0.01)
        marks["opened"] = time.time()
        log(f"bench watch-open: {sum(w.opened is not None for w in watches)} watches open")
        status, _ = await asyncio.to_thread(
            target.call, "POST", base, {"metadata": {"name": marker}}
        )
        if status != 201:
            raise WatchOpenError(f"creating the marker ConfigMap: HTTP {status}")
        await wait_for_markers(watches, options.event_timeout)
        await asyncio.sleep(max(0.0, marks["opened"] + options.after - time.time()))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    with prober:
        asyncio.run(scenario())
    target.call("DELETE", f"{base}/{marker}")
    return _report(options, watches, prober.samples, marks)


class _Prober:
    """The prober process, started and stopped around the scenario."""

    def __init__(self, target: Target, path: str, interval: float) -> None:
        self.samples: list[tuple[float, float, int]] = []
        self._target = target
        context = multiprocessing.get_context("spawn")
        self._ready, self._stop = context.Event(), context.Event()
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(
            target=probe, args=(target, path, interval, self._ready, self._stop, send), daemon=True
        )

    def __enter__(self) -> _Prober:
        self._process.start()
        if not self._ready.wait(60):  # the baseline starts with the prober probing
            self._process.kill()
            raise WatchOpenError(f"the prober got no answer from {self._target.url}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._receive.poll(90):
            self.samples = self._receive.recv()
        self._process.join(10)


def _report(
    options: WatchOpenOptions,
    watches: list[Watch],
    samples: list[tuple[float, float, int]],
    marks: dict[str, float],
) -> dict[str, Any]:
    start, opened = marks["start"], marks["opened"]
    before = [s for s in samples if s[0] + s[1] < start]
    during = [s for s in samples if s[0] < opened and s[0] + s[1] >= start]
    after = [s for s in samples if s[0] >= opened]
    times = [w.opened for w in watches if w.opened is not None]
    open_watches = [w for w in watches if w.opened is not None]
    errors = sorted({w.error for w in watches if w.error and w.opened is None})
    return {
        "watches": options.watches,
        "objects": options.objects,
        "server": options.url or "started",
        "workers": None if options.url else options.workers or settings.KRUNTIMES_WEB_WORKERS,
        "watch_openings": _openings(options),
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "opened": len(times),
        "open_all_s": round(opened - start, 2),
        "open_p50_s": round(percentile(times, 0.50), 2),
        "open_p99_s": round(percentile(times, 0.99), 2),
        "events_lost": options.watches - sum(w.saw_marker for w in open_watches),
        "initial_incomplete": sum(w.initial < options.objects for w in open_watches),
        "before": _latency(before),
        "during": _latency(during),
        "open": _latency(after),
        "errors": errors[:5],
    }


def _openings(options: WatchOpenOptions) -> int | None:
    if options.url:
        return None
    if options.openings is not None:
        return options.openings
    return int(settings.KRUNTIMES_WATCH_OPENINGS)


def _latency(samples: list[tuple[float, float, int]]) -> dict[str, Any]:
    seconds = [s[1] for s in samples]
    return {
        "requests": len(samples),
        "failed": sum(s[2] != 200 for s in samples),
        "p50_ms": round(percentile(seconds, 0.50) * 1000, 1),
        "p99_ms": round(percentile(seconds, 0.99) * 1000, 1),
        "max_ms": round(max(seconds, default=0.0) * 1000, 1),
    }
