"""``manage.py bench runs``: end-to-end latency of ``echo`` Runs, next to a bare Celery round trip.

1. Preflight: the database answers and is migrated, the broker answers.
2. A fresh namespace with one Runtime of ``replicas = ceil(C / 4)`` pods whose ``runs``
   capacity lets C Runs execute at once; the control worker (``up``'s command line), the echo
   worker and the local Runtime Pods start; the bench waits for the pods to be Ready.
3. Runs: C client threads, each creating a Run through the real API code path (DRF
   ``APIClient`` in-process, Bearer token of a superuser made for the bench) and polling the
   database until the Run is terminal; a warm-up first, then ``count`` measured Runs.
4. Celery: the same count and concurrency of ``bench.echo`` round trips on the same broker.
5. Everything stops, the namespace and the bench user are deleted.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, connections, models

from scheduling import pod_writer
from scheduling.models import TERMINAL_PHASES, Run, RunPhase, RuntimePod

from . import tracelog
from . import workload as namespaces
from .echo import EchoClient, Lost
from .measure import percentile
from .stack import Stack, StackError

API = "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs"
API_VERSION = "kruntimes.io/v1alpha1"
RUNTIME = "bench"
RUNS_PER_POD = 4
BENCH_USER = "bench-runs"
SCRIPT = "echo hi"
ECHO_TIMEOUT = 10.0  # seconds: a reply not back by then was lost

Log = Callable[[str], None]


class BenchError(RuntimeError):
    """The bench cannot run; the message says what must be running or what failed."""


# --- the pure parts ---------------------------------------------------------------------


def runtime_shape(concurrency: int) -> tuple[int, int]:
    """(replicas, runs capacity per pod): ceil(C / 4) pods that hold C Runs at once."""
    replicas = max(1, math.ceil(concurrency / RUNS_PER_POD))
    return replicas, max(1, math.ceil(concurrency / replicas))


def runtime_manifest(replicas: int, capacity: int, artifact_store: dict | None = None) -> dict:
    spec: dict = {
        "template": {"spec": {"containers": [{"name": "runtime", "image": "bench"}]}},
        "replicas": replicas,
        "capacity": {"resources": {"runs": capacity}},
    }
    if artifact_store:
        spec["artifactStore"] = artifact_store
    return {
        "apiVersion": API_VERSION,
        "kind": "Runtime",
        "metadata": {"name": RUNTIME},
        "spec": spec,
    }


def run_manifest(name: str) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "Run",
        "metadata": {"name": name},
        "spec": {"runtime": RUNTIME, "source": {"inline": SCRIPT}, "mode": {"task": {}}},
    }


@dataclass
class Sample:
    """One Run (or echo round trip): seconds to the end, or why it failed."""

    index: int
    seconds: float = 0.0
    error: str = ""
    lost: bool = False  # an echo reply that never came (see EchoClient.unreadable)
    # seconds from just before the POST to: the POST's answer and each phase first polled
    marks: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass
class Series:
    samples: list[Sample]
    wall_seconds: float

    @property
    def ok(self) -> list[Sample]:
        return [s for s in self.samples if s.ok]

    @property
    def errors(self) -> list[Sample]:
        return [s for s in self.samples if not s.ok and not s.lost]

    @property
    def lost(self) -> list[Sample]:
        return [s for s in self.samples if s.lost]

    def ms(self) -> list[float]:
        return [s.seconds * 1000 for s in self.ok]

    def per_second(self) -> float:
        return len(self.ok) / self.wall_seconds if self.wall_seconds > 0 else 0.0


def result_line(*, count: int, concurrency: int, runs: Series, celery: Series, **extra) -> dict:
    """The JSON line's fields: the required ones first, then ``extra`` (broker, pods...)."""
    run_ms, echo_ms = runs.ms(), celery.ms()
    p50, celery_p50 = percentile(run_ms, 0.5), percentile(echo_ms, 0.5)
    return {
        "count": count,
        "concurrency": concurrency,
        "p50_ms": round(p50, 1),
        "p99_ms": round(percentile(run_ms, 0.99), 1),
        "runs_per_s": round(runs.per_second(), 2),
        "celery_p50_ms": round(celery_p50, 1),
        "celery_p99_ms": round(percentile(echo_ms, 0.99), 1),
        **extra,
        "overhead_x": round(p50 / celery_p50, 2) if celery_p50 else None,
        "errors": len(runs.errors) + len(celery.errors),
        "echo_lost": len(celery.lost),
    }


def format_line(result: dict) -> str:
    return json.dumps(result, separators=(", ", ": "))


def summarize(name: str, values_ms: list[float]) -> str:
    if not values_ms:
        return f"{name}: -"
    return (
        f"{name}: p50 {percentile(values_ms, 0.5):.1f} p90 {percentile(values_ms, 0.9):.1f}"
        f" p99 {percentile(values_ms, 0.99):.1f} max {max(values_ms):.1f} ms"
    )


def phase_breakdown(samples: list[Sample]) -> list[str]:
    """Per step of a Run's life, the time from the POST's start until it was first seen."""
    lines = []
    for mark in ("posted", RunPhase.SCHEDULED, RunPhase.RUNNING, RunPhase.SUCCEEDED):
        values = [s.marks[mark] * 1000 for s in samples if mark in s.marks]
        if values:
            lines.append(
                summarize(f"  {mark:<9} seen after", values)
                + f" ({len(values)}/{len(samples)} Runs)"
            )
    return lines


# --- client threads ---------------------------------------------------------------------


def run_clients(
    count: int,
    concurrency: int,
    one: Callable[[int], Sample],
    abort: threading.Event,
    *,
    per_thread_close: Callable[[], None] = lambda: None,
    watch: Callable[[], None] = lambda: None,
    prefix: str = "bench-client",
) -> Series:
    """``concurrency`` threads doing ``one(index)`` until ``count`` are done; ``watch`` runs
    in the calling thread every 0.2 s and may raise (a child died) to stop everything."""
    samples: list[Sample | None] = [None] * count
    indexes = itertools.count()
    lock = threading.Lock()

    def client() -> None:
        try:
            while not abort.is_set():
                with lock:
                    index = next(indexes)
                if index >= count:
                    return
                try:
                    samples[index] = one(index)
                except Exception as exc:  # noqa: BLE001 - a failed sample, not a dead thread
                    samples[index] = Sample(index, error=f"{type(exc).__name__}: {exc}")
        finally:
            per_thread_close()

    threads = [
        threading.Thread(target=client, name=f"{prefix}-{i}", daemon=True)
        for i in range(concurrency)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():  # short joins: Ctrl-C reaches the main thread
                thread.join(0.2)
                watch()
    except BaseException:
        abort.set()
        raise
    wall = time.perf_counter() - started
    if abort.is_set():
        raise KeyboardInterrupt
    return Series(
        [s if s is not None else Sample(i, error="not run") for i, s in enumerate(samples)], wall
    )


def _close_thread_connections() -> None:
    connections.close_all()  # this thread's connections only


@dataclass
class RunsOptions:
    count: int
    concurrency: int
    namespace: str = "bench-runs"
    warmup: int | None = None
    poll: float = 0.003
    run_timeout: float = 60.0
    startup_timeout: float = 120.0
    keep: bool = False
    control_argv: list[str] = field(default_factory=list)
    beat_argv: list[str] = field(default_factory=list)  # empty: no beat

    def __post_init__(self) -> None:
        if self.count < 1 or self.concurrency < 1:
            raise ValueError("--count and --concurrency must be at least 1")
        if self.warmup is None:
            self.warmup = max(5, 2 * self.concurrency)
        if self.warmup < 0:
            raise ValueError("--warmup must not be negative")
        if not 0 < self.poll <= 1:
            raise ValueError("--poll-ms must be between 0 and 1000")


class PhaseWatcher:
    """One thread polls the phases of every Run a client waits for (one query per poll,
    however many clients), noting when each phase was first seen. ``model`` and ``terminal``:
    another kind with a ``phase`` column (``bench workflows`` watches WorkflowRuns too)."""

    def __init__(
        self,
        namespace: str,
        poll: float,
        *,
        model: type[models.Model] = Run,
        terminal: Collection[str] = TERMINAL_PHASES,
    ) -> None:
        self.namespace = namespace
        self.poll = poll
        self.model = model
        self.terminal = frozenset(terminal)
        self._lock = threading.Lock()
        self._watched: dict[str, tuple[dict[str, float], threading.Event]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def watch(self, name: str) -> tuple[dict[str, float], threading.Event]:
        entry: tuple[dict[str, float], threading.Event] = ({}, threading.Event())
        with self._lock:
            self._watched[name] = entry
        return entry

    def forget(self, name: str) -> None:
        with self._lock:
            self._watched.pop(name, None)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                with self._lock:
                    names = list(self._watched)
                if names:
                    self._look(names)
                time.sleep(self.poll)
        finally:
            _close_thread_connections()

    def _look(self, names: list[str]) -> None:
        rows = self.model.objects.filter(namespace=self.namespace, name__in=names).values_list(
            "name", "phase"
        )
        seen = time.perf_counter()
        with self._lock:
            for name, phase in rows:
                entry = self._watched.get(name)
                if entry is None:
                    continue
                entry[0].setdefault(phase, seen)
                if phase in self.terminal:
                    entry[1].set()


class RunClient:
    """Creates Runs through the API in-process; a PhaseWatcher sees them end."""

    def __init__(
        self,
        namespace: str,
        token: str,
        watcher: PhaseWatcher,
        timeout: float,
        abort: threading.Event | None = None,
    ) -> None:
        self.namespace = namespace
        self.abort = abort or threading.Event()
        self.url = API.format(namespace=namespace)
        self.token = token
        self.watcher = watcher
        self.timeout = timeout
        self._local = threading.local()
        hosts = settings.ALLOWED_HOSTS
        self.host = (
            "testserver"
            if ("testserver" in hosts or "*" in hosts or not hosts)
            else hosts[0].lstrip(".")
        )

    def _client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            from rest_framework.test import APIClient

            client = APIClient(SERVER_NAME=self.host)
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.token}")
            self._local.client = client
        return client

    def __call__(self, name: str, index: int) -> Sample:
        client = self._client()
        sample = Sample(index)
        first_seen, ended = self.watcher.watch(name)
        try:
            started = time.perf_counter()
            response = client.post(self.url, run_manifest(name), format="json")
            sample.marks["posted"] = time.perf_counter() - started
            if response.status_code != 201:
                sample.error = f"POST {response.status_code}: {response.content[:300]!r}"
                return sample
            while not ended.wait(0.2):
                waited = time.perf_counter() - started
                if waited > self.timeout or self.abort.is_set():
                    phase = max(first_seen, key=first_seen.get, default="missing")
                    sample.error = f"Run {name} still {phase} after {waited:.0f} s"
                    return sample
        finally:
            self.watcher.forget(name)
        for phase, seen in first_seen.items():
            sample.marks.setdefault(phase, seen - started)
        phase = next(p for p in first_seen if p in TERMINAL_PHASES)
        sample.seconds = sample.marks[phase]
        if phase != RunPhase.SUCCEEDED:
            status = (
                Run.objects.filter(namespace=self.namespace, name=name)
                .values_list("status", flat=True)
                .first()
                or {}
            )
            sample.error = (
                f"Run {name} ended {phase}: {status.get('reason', '')} "
                f"{status.get('message', '')}".strip()
            )
        return sample


# --- setup and teardown -----------------------------------------------------------------


def broker_name() -> str:
    return settings.CELERY_BROKER_URL.split(":", 1)[0] or "?"


def preflight() -> None:
    """The database and the broker answer, migrations are applied; else a one-line error."""
    from django.db.migrations.executor import MigrationExecutor

    database = settings.DATABASES["default"]
    where = "DATABASE_URL" if connection.vendor != "sqlite" else str(database["NAME"])
    try:
        connection.ensure_connection()
        executor = MigrationExecutor(connection)
        unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # noqa: BLE001 - any failure: say what must be running
        raise BenchError(
            f"the database ({connection.vendor}, {where}) is not reachable: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}; "
            f"it must be running (settings DATABASE_URL)"
        ) from None
    if unapplied:
        raise BenchError(
            f"the database has {len(unapplied)} unapplied migration(s): "
            f"run `manage.py migrate` first"
        )
    from portal.celery import app

    if app.conf.task_always_eager:
        raise BenchError("CELERY_TASK_ALWAYS_EAGER is on: the bench needs real workers")
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.5, timeout=3)
    except Exception as exc:  # noqa: BLE001
        raise BenchError(
            f"the Celery broker {app.conf.broker_url!r} is not reachable "
            f"({exc}); it must be running (settings CELERY_BROKER_URL)"
        ) from None


def bench_token() -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(
        username=BENCH_USER, defaults={"is_superuser": True, "is_staff": True}
    )
    if not user.is_superuser:
        user.is_superuser = user.is_staff = True
        user.save(update_fields=["is_superuser", "is_staff"])
    token, _ = Token.objects.get_or_create(user=user)
    return token.key


def delete_bench_user() -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username=BENCH_USER).delete()


def create_namespace(
    namespace: str, replicas: int, capacity: int, log: Log, artifact_store: dict | None = None
) -> None:
    from portal.machinery import store

    namespaces.delete_namespace(namespace)
    store.create(
        namespaces._kind("", "v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        context=namespaces.OPERATOR,
    )
    store.create(
        namespaces._kind("kruntimes.io", "v1alpha1", "runtimes"),
        runtime_manifest(replicas, capacity, artifact_store),
        namespace=namespace,
        context=namespaces.OPERATOR,
    )
    log(
        f"namespace {namespace}: Runtime {RUNTIME} with {replicas} pod(s) of capacity "
        f"runs={capacity}"
    )


def wait_for_pods(stack: Stack, namespace: str, replicas: int, timeout: float, log: Log) -> None:
    started = time.monotonic()
    while True:
        stack.check_alive()
        ready = RuntimePod.objects.filter(
            namespace=namespace, runtime=RUNTIME, ready=True, last_heartbeat__isnull=False
        ).count()
        if ready >= replicas:
            log(f"{ready} Runtime Pod(s) Ready after {time.monotonic() - started:.1f} s")
            return
        if time.monotonic() - started > timeout:
            raise StackError(
                f"only {ready} of {replicas} Runtime Pods got Ready within "
                f"{timeout:g} s (is the control worker consuming heartbeats? "
                f"see {stack.log_dir})"
            )
        time.sleep(0.1)


def settle(stack: Stack, namespace: str, log: Log, seconds: float = 2.0) -> None:
    """Let the control worker drain what earlier runs left in the broker, removing ghosts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        stack.check_alive()
        remove_ghost_pods(stack, namespace, log)
        time.sleep(0.1)


def remove_ghost_pods(stack: Stack, namespace: str, log: Log) -> None:
    """Delete RuntimePod rows of the namespace that are none of the bench's pods.

    A heartbeat an earlier incarnation sent just before it stopped can still wait in the
    broker's ``control`` queue; ``record_heartbeat`` upserts the pod it names, so such a ghost
    reappears Ready in the recreated namespace and Runs bound to it never run. The stale
    messages are consumed by the time the bench's own pods are Ready.
    """
    ours = stack.pod_names()
    ghosts = RuntimePod.objects.filter(namespace=namespace).exclude(name__in=ours)
    names = list(ghosts.values_list("name", flat=True))
    if names:
        pod_writer.delete_where(ghosts)
        log(
            f"removed {len(names)} ghost RuntimePod row(s) {', '.join(sorted(names))} "
            f"re-created by stale heartbeats left in the broker"
        )


# --- the whole bench --------------------------------------------------------------------


def measure_runs(
    client: RunClient,
    prefix: str,
    count: int,
    concurrency: int,
    abort: threading.Event,
    watch: Callable[[], None],
) -> Series:
    return run_clients(
        count,
        concurrency,
        lambda i: client(f"{prefix}-{i:05d}", i),
        abort,
        per_thread_close=_close_thread_connections,
        watch=watch,
        prefix=f"bench-{prefix}",
    )


def measure_echo(
    echo: EchoClient,
    count: int,
    concurrency: int,
    timeout: float,
    abort: threading.Event,
    watch: Callable[[], None],
) -> Series:
    tag = uuid.uuid4().hex[:6]

    def one(index: int) -> Sample:
        try:
            return Sample(index, seconds=echo.round_trip(f"{tag}-{index}", timeout))
        except Lost as exc:
            return Sample(index, error=str(exc), lost=True)

    return run_clients(count, concurrency, one, abort, watch=watch, prefix="bench-echo")


def report(name: str, series: Series, log: Log) -> None:
    log(
        f"{name}: {len(series.ok)}/{len(series.samples)} ok in {series.wall_seconds:.2f} s "
        f"({series.per_second():.1f}/s); " + summarize("latency", series.ms())
    )
    for sample in series.errors[:5]:
        log(f"  error: {sample.error}")
    if series.lost:
        log(f"  {len(series.lost)} echo repl(ies) lost (not counted in the percentiles)")


def run_runs_bench(
    options: RunsOptions, *, log: Log = lambda _: None, abort: threading.Event | None = None
) -> dict:
    """Set up, measure, tear down; returns the JSON line's fields."""
    from .echo import worker_argv

    abort = abort or threading.Event()
    preflight()
    replicas, capacity = runtime_shape(options.concurrency)
    stack = Stack(Path(settings.DATA_DIR) / "bench-runs" / "logs")
    echo = EchoClient(poll=options.poll)
    namespace = options.namespace
    watcher = PhaseWatcher(namespace, options.poll)
    try:
        create_namespace(namespace, replicas, capacity, log)
        token = bench_token()
        started = time.monotonic()
        stack.start("control-worker", options.control_argv)
        if options.beat_argv:
            stack.start("beat", options.beat_argv)
        stack.start(
            "echo-worker",
            worker_argv(sys.executable, options.concurrency, f"bench-echo-{uuid.uuid4().hex[:6]}"),
        )
        stack.start_pods(namespace, RUNTIME, replicas)
        log(
            f"started the control worker{', beat' if options.beat_argv else ''}, the echo "
            f"worker and {replicas} Runtime Pod(s); "
            f"logs in {stack.log_dir}"
        )
        wait_for_pods(stack, namespace, replicas, options.startup_timeout, log)
        settle(stack, namespace, log)
        echo.start()
        echo.wait_ready(
            max(1.0, options.startup_timeout - (time.monotonic() - started)),
            alive=stack.check_alive,
        )
        log(f"echo worker answers; stack up after {time.monotonic() - started:.1f} s")

        watcher.start()
        client = RunClient(namespace, token, watcher, options.run_timeout, abort)
        echo_timeout = min(options.run_timeout, ECHO_TIMEOUT)
        if options.warmup:
            warm = measure_runs(
                client, "warm", options.warmup, options.concurrency, abort, stack.check_alive
            )
            report(f"warm-up: {options.warmup} Runs", warm, log)
            stack.check_alive()
            warm_echo = measure_echo(
                echo, options.warmup, options.concurrency, echo_timeout, abort, stack.check_alive
            )
            report(f"warm-up: {options.warmup} echo round trips", warm_echo, log)
        remove_ghost_pods(stack, namespace, log)
        log(f"measuring {options.count} Runs, concurrency {options.concurrency} ...")
        window = datetime.now()
        runs = measure_runs(
            client, "run", options.count, options.concurrency, abort, stack.check_alive
        )
        report("Runs", runs, log)
        for line in phase_breakdown(runs.ok):
            log(line)
        log("tasks run while measuring the Runs (from the children's logs):")
        for line in tracelog.breakdown(stack.logs(), window, datetime.now()):
            log(line)
        stack.check_alive()
        log(f"measuring {options.count} bench.echo round trips ...")
        window = datetime.now()
        celery = measure_echo(
            echo, options.count, options.concurrency, echo_timeout, abort, stack.check_alive
        )
        report("Celery echo", celery, log)
        for line in tracelog.breakdown(
            {"echo-worker": stack.logs()["echo-worker"]}, window, datetime.now()
        ):
            log(line)
        if echo.unreadable:
            log(
                f"  {len(echo.unreadable)} unreadable repl(ies) on the reply queue: "
                f"{echo.unreadable[0]}"
            )
        stack.check_alive()
    finally:
        abort.set()
        watcher.stop()
        echo.close()
        log(f"stopped every child in {stack.stop():.1f} s")
        if not options.keep:
            namespaces.delete_namespace(namespace)
            delete_bench_user()
            log(f"deleted namespace {namespace} and user {BENCH_USER}")
    return result_line(
        count=options.count,
        concurrency=options.concurrency,
        runs=runs,
        celery=celery,
        broker=broker_name(),
        database=connection.vendor,
        pods=replicas,
    )
