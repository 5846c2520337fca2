"""``manage.py bench workflows``: WorkflowRun latency on real processes, and what the controller
and the scheduler add per step above the child Runs' own time.

1. Preflight (``runs.preflight``): the database answers and is migrated, the broker answers.
2. A fresh namespace with a Runtime ``bench`` of ``ceil(C / 2) + 1`` pods (capacity ``runs: 4``)
   and a filesystem artifactStore; the control worker and beat (``up``'s command lines) and the
   local Runtime Pods start (``runs.Stack``); the bench waits for the pods to be Ready.
3. C client threads each create a WorkflowRun of the demo's two jobs (build: checkout, test,
   package sharing the job workspace, package uploading ``dist.tgz``; deploy: one step
   consuming it as an artifact input) through the store, as the API does, and wait until it is
   finished; a warm-up first, then ``count`` measured WorkflowRuns. Two watcher threads poll the
   WorkflowRuns' and the child Runs' phases (each one query per poll) and note when each phase
   was first seen.
4. Everything stops; the namespace, its rows and its files (pod workspaces, artifacts) go.

A child Run's own time is from its phase first seen Running to first seen terminal, as polled
every ``--poll-ms``: its status startTime/completionTime have whole seconds only, too coarse for
steps of tens of milliseconds.
"""

from __future__ import annotations

import math
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connection

from scheduling.models import TERMINAL_PHASES, RunPhase
from workflows.models import FINISHED_RUN_PHASES, WorkflowRun, WorkflowRunPhase
from workflows.names import child_name

from . import runs as common
from . import tracelog
from . import workload as namespaces
from .measure import percentile
from .stack import Stack

RUNTIME = common.RUNTIME  # runs.wait_for_pods waits for this Runtime's pods
RUNS_PER_POD = 4
ARTIFACT_CLAIM = "bench-artifacts"
ARTIFACT_STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": ARTIFACT_CLAIM}}
# seconds a finished WorkflowRun's child Runs may still take to be seen terminal by the watcher
CHILD_GRACE = 2.0

Log = Callable[[str], None]

# examples/50-workflow-ci-data-sharing-demo.yaml, on the bench Runtime
JOBS: dict = {
    "build": {
        "runs-on": RUNTIME,
        "steps": [
            {"name": "checkout", "run": "mkdir -p src\necho 'print(\"hello\")' > src/app.py\n"},
            {
                "name": "test",
                "run": 'test -f src/app.py\necho "tests=passed" >> "$KRUNTIME_OUTPUTS"\n',
            },
            {
                "name": "package",
                "run": 'mkdir -p "$KRUNTIME_ARTIFACTS_DIR"\n'
                'tar -czf "$KRUNTIME_ARTIFACTS_DIR/dist.tgz" src\n',
            },
        ],
        "outputs": {"tests": "${{ steps.test.outputs.tests }}"},
    },
    "deploy": {
        "runs-on": RUNTIME,
        "needs": ["build"],
        "steps": [
            {
                "name": "verify-artifact",
                "artifacts": [{"from": "jobs.build.artifacts.dist.tgz", "path": "dist.tgz"}],
                # a value reaches the script through env:, never pasted into run
                "env": {"TESTS": "${{ jobs.build.outputs.tests }}"},
                "run": 'tar -tzf dist.tgz\necho "artifact verified (tests $TESTS)"\n',
            }
        ],
    },
}
STEPS = [(job, step["name"]) for job, spec in JOBS.items() for step in spec["steps"]]


# --- the pure parts ---------------------------------------------------------------------


def runtime_shape(concurrency: int) -> tuple[int, int]:
    """(replicas, runs capacity per pod): ceil(C / 2) + 1 pods of 4, room to spare (a
    WorkflowRun runs one step at a time, each job's steps on the pod holding its workspace)."""
    return math.ceil(concurrency / 2) + 1, RUNS_PER_POD


def workflow_run_manifest(name: str) -> dict:
    return {
        "apiVersion": common.API_VERSION,
        "kind": "WorkflowRun",
        "metadata": {"name": name},
        "spec": {"jobs": JOBS, "inputs": {}},
    }


def step_names(wfr_name: str) -> list[str]:
    """The child Runs' names, in step order (the controller's deterministic names)."""
    return [child_name(wfr_name, job, step) for job, step in STEPS]


@dataclass
class Step:
    """One child Run: seconds from the WorkflowRun's creation to each phase first seen."""

    name: str
    marks: dict[str, float] = field(default_factory=dict)

    @property
    def created(self) -> float | None:
        return min(self.marks.values(), default=None)

    @property
    def ended(self) -> float | None:
        return next((v for k, v in self.marks.items() if k in TERMINAL_PHASES), None)

    @property
    def own(self) -> float:
        """Running first seen to terminal first seen (0 if Running was never seen)."""
        ended = self.ended
        if ended is None:
            return 0.0
        return max(0.0, ended - self.marks.get(RunPhase.RUNNING, ended))


@dataclass
class WfrSample:
    """One WorkflowRun: seconds from just before its creation to Succeeded, or why not."""

    index: int
    seconds: float = 0.0
    error: str = ""
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def own_seconds(self) -> float:
        return sum(step.own for step in self.steps)

    @property
    def overhead_per_step(self) -> float:
        return (self.seconds - self.own_seconds) / max(1, len(self.steps))


def result_line(
    *, count: int, concurrency: int, samples: list[WfrSample], wall_seconds: float, **extra
) -> dict:
    """The JSON line's fields: count, concurrency, ``extra`` (broker, database, pods), then
    the figures."""
    ok = [s for s in samples if s.ok]
    wfr_ms = [s.seconds * 1000 for s in ok]
    step_ms = [step.own * 1000 for s in ok for step in s.steps]
    steps = {len(s.steps) for s in ok}
    return {
        "count": count,
        "concurrency": concurrency,
        **extra,
        "wfr_p50_ms": round(percentile(wfr_ms, 0.5), 1),
        "wfr_p99_ms": round(percentile(wfr_ms, 0.99), 1),
        "wfr_per_s": round(len(ok) / wall_seconds, 2) if wall_seconds > 0 else 0.0,
        "steps_per_wfr": steps.pop() if len(steps) == 1 else (sorted(steps) or 0),
        "step_run_p50_ms": round(percentile(step_ms, 0.5), 1),
        "overhead_per_step_ms": round(percentile([s.overhead_per_step * 1000 for s in ok], 0.5), 1),
        "errors": len(samples) - len(ok),
    }


def step_breakdown(samples: list[WfrSample]) -> list[str]:
    """Per step (p50s): when its Run was first seen after the previous step ended (the
    controller's reaction), from then to terminal (scheduling, dispatch, the run, the reports)
    and of that its own time; then the WorkflowRun's Succeeded after its last step ended."""
    ok = [s for s in samples if s.ok and len(s.steps) == len(STEPS)]
    lines = []
    for position, (job, step) in enumerate(STEPS):
        made, done, own, running = [], [], [], 0
        for sample in ok:
            current = sample.steps[position]
            before = sample.steps[position - 1].ended if position else 0.0
            if current.created is None or current.ended is None or before is None:
                continue
            made.append((current.created - before) * 1000)
            done.append((current.ended - current.created) * 1000)
            own.append(current.own * 1000)
            running += RunPhase.RUNNING in current.marks
        lines.append(
            f"  {job}/{step}: seen {p50(made)} ms after "
            f"{'the previous step ended' if position else 'the create began'}, terminal "
            f"{p50(done)} ms later, {p50(own)} ms of that Running "
            f"(Running seen for {running}/{len(ok)})"
        )
    tail = [(s.seconds - s.steps[-1].ended) * 1000 for s in ok if s.steps[-1].ended is not None]
    lines.append(f"  Succeeded seen {p50(tail)} ms after the last step ended (p50)")
    return lines


def p50(values: list[float]) -> str:
    return f"{percentile(values, 0.5):.1f}" if values else "-"


@dataclass
class WorkflowsOptions:
    count: int
    concurrency: int | None = None  # None: count (all at once)
    namespace: str = "bench-workflows"
    warmup: int = 1
    poll: float = 0.003
    timeout: float = 120.0
    startup_timeout: float = 120.0
    keep: bool = False
    control_argv: list[str] = field(default_factory=list)
    beat_argv: list[str] = field(default_factory=list)  # empty: no beat

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("--count must be at least 1")
        if self.concurrency is None:
            self.concurrency = self.count
        if not 1 <= self.concurrency <= self.count:
            raise ValueError("--concurrency must be between 1 and --count")
        if self.warmup < 0:
            raise ValueError("--warmup must not be negative")
        if not 0 < self.poll <= 1:
            raise ValueError("--poll-ms must be between 0 and 1000")
        if self.timeout <= 0 or self.startup_timeout <= 0:
            raise ValueError("--timeout and --startup-timeout must be positive")


# --- the client ---------------------------------------------------------------------------


class WorkflowRunClient:
    """Creates WorkflowRuns through the store in-process; watchers see them and their Runs."""

    def __init__(
        self,
        namespace: str,
        wfrs: common.PhaseWatcher,
        runs: common.PhaseWatcher,
        timeout: float,
        abort: threading.Event,
    ) -> None:
        self.namespace, self.wfrs, self.runs = namespace, wfrs, runs
        self.timeout, self.abort = timeout, abort

    def __call__(self, name: str, index: int) -> WfrSample:
        from portal.machinery import store

        sample = WfrSample(index)
        first_seen, ended = self.wfrs.watch(name)
        children = [(child, *self.runs.watch(child)) for child in step_names(name)]
        try:
            started = time.perf_counter()
            store.create(
                namespaces._kind("kruntimes.io", "v1alpha1", "workflowruns"),
                workflow_run_manifest(name),
                namespace=self.namespace,
                context=namespaces.OPERATOR,
            )
            while not ended.wait(0.2):
                waited = time.perf_counter() - started
                if waited > self.timeout or self.abort.is_set():
                    phase = max(first_seen, key=first_seen.get, default="missing")
                    sample.error = f"WorkflowRun {name} still {phase} after {waited:.0f} s"
                    return sample
            deadline = time.monotonic() + CHILD_GRACE
            for _, _, child_ended in children:
                child_ended.wait(max(0.0, deadline - time.monotonic()))
        finally:
            self.wfrs.forget(name)
            for child, _, _ in children:
                self.runs.forget(child)
        phase = next(p for p in first_seen if p in FINISHED_RUN_PHASES)
        sample.seconds = first_seen[phase] - started
        sample.steps = [
            Step(child, {p: seen - started for p, seen in marks.items()})
            for child, marks, _ in children
            if marks
        ]
        if phase != WorkflowRunPhase.SUCCEEDED:
            status = (
                WorkflowRun.objects.filter(namespace=self.namespace, name=name)
                .values_list("status", flat=True)
                .first()
                or {}
            )
            sample.error = f"WorkflowRun {name} ended {phase}: {status.get('message', '')}"
        elif len(sample.steps) != len(STEPS) or any(s.ended is None for s in sample.steps):
            sample.error = (
                f"WorkflowRun {name} Succeeded but only {len(sample.steps)} of its "
                f"{len(STEPS)} child Runs were seen, or not all of them ended"
            )
        return sample


def measure(
    client: WorkflowRunClient,
    prefix: str,
    count: int,
    concurrency: int,
    abort: threading.Event,
    watch: Callable[[], None],
) -> tuple[list[WfrSample], float]:
    series = common.run_clients(
        count,
        concurrency,
        lambda i: client(f"{prefix}-{i:05d}", i),
        abort,
        per_thread_close=common._close_thread_connections,
        watch=watch,
        prefix=f"bench-{prefix}",
    )
    samples = [
        s if isinstance(s, WfrSample) else WfrSample(s.index, error=s.error or "not run")
        for s in series.samples
    ]
    return samples, series.wall_seconds


def report(name: str, samples: list[WfrSample], wall: float, log: Log) -> None:
    ok = [s for s in samples if s.ok]
    log(
        f"{name}: {len(ok)}/{len(samples)} Succeeded in {wall:.2f} s; "
        + common.summarize("wall", [s.seconds * 1000 for s in ok])
    )
    for sample in [s for s in samples if not s.ok][:5]:
        log(f"  error: {sample.error}")


# --- setup and teardown -----------------------------------------------------------------


def delete_namespace(namespace: str) -> None:
    """The namespace's rows (WorkflowRuns first, then what ``bench runs`` deletes) and files:
    its pods' workspaces and its artifacts in the bench's artifact volume."""
    WorkflowRun.objects.filter(namespace=namespace).delete()
    namespaces.delete_namespace(namespace)
    for path in (
        Path(settings.DATA_DIR) / "pods" / namespace,
        Path(settings.KRUNTIMES_ARTIFACT_VOLUMES) / ARTIFACT_CLAIM / "namespaces" / namespace,
    ):
        shutil.rmtree(path, ignore_errors=True)


def run_workflows_bench(
    options: WorkflowsOptions, *, log: Log = lambda _: None, abort: threading.Event | None = None
) -> dict:
    """Set up, measure, tear down; returns the JSON line's fields."""
    abort = abort or threading.Event()
    common.preflight()
    assert options.concurrency is not None
    replicas, capacity = runtime_shape(options.concurrency)
    stack = Stack(Path(settings.DATA_DIR) / "bench-workflows" / "logs")
    namespace = options.namespace
    wfrs = common.PhaseWatcher(
        namespace, options.poll, model=WorkflowRun, terminal=FINISHED_RUN_PHASES
    )
    runs = common.PhaseWatcher(namespace, options.poll)
    try:
        delete_namespace(namespace)
        common.create_namespace(namespace, replicas, capacity, log, ARTIFACT_STORE)
        started = time.monotonic()
        stack.start("control-worker", options.control_argv)
        if options.beat_argv:
            stack.start("beat", options.beat_argv)
        stack.start_pods(namespace, RUNTIME, replicas)
        log(
            f"started the control worker{', beat' if options.beat_argv else ''} and "
            f"{replicas} Runtime Pod(s); logs in {stack.log_dir}"
        )
        common.wait_for_pods(stack, namespace, replicas, options.startup_timeout, log)
        common.settle(stack, namespace, log)
        log(f"stack up after {time.monotonic() - started:.1f} s")
        wfrs.start()
        runs.start()
        client = WorkflowRunClient(namespace, wfrs, runs, options.timeout, abort)
        if options.warmup:
            warm, wall = measure(
                client,
                "warm",
                options.warmup,
                min(options.warmup, options.concurrency),
                abort,
                stack.check_alive,
            )
            report(f"warm-up: {options.warmup} WorkflowRuns", warm, wall, log)
        common.remove_ghost_pods(stack, namespace, log)
        log(
            f"measuring {options.count} WorkflowRuns of {len(STEPS)} steps, "
            f"concurrency {options.concurrency} ..."
        )
        window = datetime.now()
        samples, wall = measure(
            client, "wf", options.count, options.concurrency, abort, stack.check_alive
        )
        report("WorkflowRuns", samples, wall, log)
        for line in step_breakdown(samples):
            log(line)
        log("tasks run while measuring (from the children's logs):")
        ended = datetime.now()
        for line in tracelog.breakdown(stack.logs(), window, ended):
            log(line)
        reconciled = tracelog.log_reconciles(stack.logs(), window, ended)
        for queue, n in sorted(reconciled.items()):
            log(f"  work queue {queue}: {n} keys reconciled")
        stack.check_alive()
    finally:
        abort.set()
        wfrs.stop()
        runs.stop()
        log(f"stopped every child in {stack.stop():.1f} s")
        if not options.keep:
            delete_namespace(namespace)
            log(f"deleted namespace {namespace}, its rows and its files")
    return result_line(
        count=options.count,
        concurrency=options.concurrency,
        samples=samples,
        wall_seconds=wall,
        broker=common.broker_name(),
        database=connection.vendor,
        pods=replicas,
        reconciles_per_wfr=round(reconciled.get("workflows", 0) / max(1, options.count), 1),
    )
