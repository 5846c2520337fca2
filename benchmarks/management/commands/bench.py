"""``manage.py bench scheduler|runs|workflows|watch``: one JSON line on stdout, progress on
stderr.

- ``bench scheduler --runs N --pods P [--affinity MODE] [--namespace NS] [--keep]``: how fast
  the scheduler binds a backlog on the configured database (settings DATABASE_URL).
- ``bench runs --count N --concurrency C``: end-to-end latency of ``echo`` Runs (API create to
  Succeeded) on real processes, next to a bare Celery round trip on the same broker.
- ``bench workflows --count N [--concurrency C]``: WorkflowRun latency (creation to Succeeded)
  of the demo's two-job, four-step Workflow on real processes, and the overhead per step above
  the child Runs' own time.

- ``bench watch --watchers N --writes M [--rate R]``: watch event delivery on one web process
  (p50/p99, events lost, memory per watch).
- ``bench invoke [--count N] [--concurrency C]``: function Runs timed to Ready on a warm pod and
  their warm invocations through the gateway to the real Runtime Server (p50/p99, invokes/s),
  beside a bare in-process call of the handler (``benchmarks.invoke``).

- ``bench watch-open --watches N [--url URL]``: ordinary GET latency before, while and after N
  watches open at once (``benchmarks.watch_open``).

The logic lives in the ``benchmarks`` app (a checkout's, not the wheel's).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

INVOKE_HELP = (
    "Warm function invocations through the gateway on real processes (control worker, beat, "
    "the HTTPS web server, one python Runtime Pod): C function Runs are created and timed to "
    "Ready, then COUNT invocations over one keep-alive connection (C=1) and COUNT over C "
    "connections, one function each. Prints ONE JSON line: ready_p50_ms, c1 and cN "
    "{p50_ms, p99_ms, per_second, errors}, bare_call_us (the same handler called in "
    "process). Exits non-zero if an invocation failed."
)
WATCH_HELP = (
    "Watch fan-out on one web process: uvicorn serving portal.asgi (as manage.py up's web "
    "workers do) holds N real HTTP watches of ConfigMaps in a fresh namespace while this "
    "process creates M ConfigMaps through the store. Prints ONE JSON line: delivered, "
    "events_lost (must be 0), duplicates, p50_ms/p99_ms/max_ms (commit to arrival at a "
    "watcher), memory_per_watcher_kib (the web process's RSS growth over N), web_rss_mib. "
    "Uses the database of settings DATABASE_URL (must be migrated). Exits non-zero if an "
    "event was lost or duplicated."
)
WATCH_OPEN_HELP = (
    "N watches opened at once against manage.py up's web command (started by the bench on a "
    "free port, or a running server: --url), while a prober process GETs a ConfigMap over and "
    "over. Prints ONE JSON line: before/during/open latency of the probe (p50_ms, p99_ms, "
    "max_ms: before the watches, while they open, once all are open), open_all_s, "
    "open_p50_s/open_p99_s, events_lost (open watches that missed a ConfigMap created after "
    "all opened; must be 0), initial_incomplete, errors. Database: settings DATABASE_URL (for "
    "the server started and the bench's token). Exits non-zero if a watch did not open or "
    "lost the event."
)
SCHEDULER_HELP = (
    "Benchmark the scheduler: bind N pending Runs onto P Runtime Pods in a fresh "
    "namespace and print one JSON line (bound_per_s, pass p50/p99, floor_s...). "
    "Uses only the database (settings DATABASE_URL)."
)
RUNS_HELP = (
    "End-to-end latency of `echo` Runs: C client threads each create a Run through the API "
    "code path (DRF APIClient in this process, no HTTP server; Bearer token of a superuser "
    "`bench-runs` made for the bench) and poll the database until it is Succeeded; then the "
    "same count and concurrency of bare Celery round trips (a `bench.echo` task served by the "
    "bench's own threads-pool worker, replying on a kombu reply queue). Prints ONE JSON line: "
    "count, concurrency, p50_ms, p99_ms, runs_per_s, celery_p50_ms, celery_p99_ms, broker, "
    "database, pods, overhead_x (p50_ms / celery_p50_ms), errors. "
    "Services used: the database of settings DATABASE_URL (SQLite under KRUNTIMES_DATA_DIR by "
    "default; must be migrated) and the broker of settings CELERY_BROKER_URL (the filesystem "
    "broker under KRUNTIMES_DATA_DIR by default, e.g. redis://... otherwise); both must be "
    "running. The bench starts everything else itself and stops it at the end (also on Ctrl-C): "
    "the control worker and beat (the command lines `manage.py up` uses), the echo worker and "
    "ceil(C/4) local Runtime Pods (runtimed) of a Runtime `bench` in a fresh namespace "
    "(leftovers deleted first). Children log to <KRUNTIMES_DATA_DIR>/bench-runs/logs. Do not "
    "run it next to `manage.py up` on the same database: up would start pods for the bench "
    "Runtime too. Exits non-zero if any Run or round trip fails."
)
WORKFLOWS_HELP = (
    "WorkflowRun latency on real processes: N WorkflowRuns of the demo's Workflow "
    "(examples/50-workflow-ci-data-sharing-demo.yaml: job build with checkout, test, package "
    "sharing the job workspace, package uploading dist.tgz; job deploy with one step consuming "
    "it as an artifact input), created through the store as the API does by C client threads "
    "(at most C running at once; default C = N), each waiting until its WorkflowRun finished; "
    "one unmeasured warm-up WorkflowRun first (--warmup). Two watcher threads poll the "
    "WorkflowRuns' and the child Runs' phases every --poll-ms. Prints ONE JSON line: count, "
    "concurrency, broker, database, pods, wfr_p50_ms, wfr_p99_ms (wall time from just before "
    "the create to Succeeded first seen), wfr_per_s, steps_per_wfr, step_run_p50_ms (each "
    "child Run's own time: its phase first seen Running to first seen terminal; status "
    "startTime/completionTime have whole seconds only), overhead_per_step_ms (p50 over the "
    "WorkflowRuns of (wall time - the sum of its child Runs' own time) / steps: what the "
    "controller, the scheduler and the dispatch add per step), errors; the progress (stderr) "
    "breaks each step down. Services: the database (settings DATABASE_URL, migrated) and the "
    "broker (settings CELERY_BROKER_URL) must be running; the bench starts the control worker, "
    "beat and ceil(C/2)+1 local Runtime Pods (capacity runs: 4) of a Runtime `bench` with a "
    "filesystem artifactStore in a fresh namespace, and stops them and deletes the namespace "
    "(rows, pod workspaces, artifacts) at the end, also on Ctrl-C. Children log to "
    "<KRUNTIMES_DATA_DIR>/bench-workflows/logs. Not next to `manage.py up` on the same "
    "database. Exits non-zero if any WorkflowRun does not succeed."
)


class Command(BaseCommand):
    help = (
        "Benchmarks: `bench scheduler ...` (the scheduler), `bench runs ...` (Run latency) or "
        "`bench workflows ...` (WorkflowRun latency)."
    )

    def create_parser(self, prog_name, subcommand):
        parser = super().create_parser(prog_name, subcommand)
        parser.epilog = "`manage.py bench <target> --help` describes each target."
        return parser

    def add_arguments(self, parser) -> None:
        # each target has its own options: ``bench <target> --help``
        targets = parser.add_subparsers(
            dest="target",
            required=True,
            metavar="{scheduler,runs,workflows,watch,watch-open,idle,api,invoke}",
        )
        idle = targets.add_parser(
            "idle",
            help="the cost of every beat pass over N finished and M unplaceable pending Runs",
            description="Bulk-creates N finished Runs (TTL not due) and M pending Runs whose "
            "Runtime has no pods, then runs each CELERY_BEAT_SCHEDULE pass and one scheduling "
            'pass in process; prints ONE JSON line {"passes": {"<name>": {"ms", "queries"}}, '
            '"finished": N, "pending": M} (median ms of 5). Database: settings DATABASE_URL.',
        )
        idle.add_argument("--finished", type=int, required=True)
        idle.add_argument("--pending", type=int, required=True)
        idle.add_argument("--keep", action="store_true")
        api = targets.add_parser(
            "api",
            help="list/get/admin latency over N Runs",
            description="Bulk-creates N Runs in namespaces of 10,000 and prints ONE JSON line "
            "of p50/p99 ms for a namespace page, a deep continue page, a labelSelector with "
            "10 matches, an all-namespaces page, a single GET and the admin Run changelist.",
        )
        api.add_argument("--objects", type=int, required=True)
        api.add_argument("--repeats", type=int, default=30)
        api.add_argument("--keep", action="store_true")
        scheduler = targets.add_parser("scheduler", help=SCHEDULER_HELP, description=SCHEDULER_HELP)
        scheduler.add_argument("--runs", type=int, required=True, help="pending Runs to bind")
        scheduler.add_argument("--pods", type=int, required=True, help="ready Runtime Pods")
        scheduler.add_argument(
            "--workspaces",
            type=int,
            default=0,
            help="Runs spread over N PersistentWorkspaces bound round-robin to the pods "
            "(every Run goes through workspace fencing); 0: none",
        )
        scheduler.add_argument(
            "--affinity", default="none", choices=["none", "required", "preferred", "anti"]
        )
        scheduler.add_argument(
            "--namespace",
            default="bench",
            help="the namespace to (re)create; its leftovers are deleted first",
        )
        scheduler.add_argument(
            "--keep", action="store_true", help="keep the namespace and its objects afterwards"
        )
        scheduler.add_argument(
            "--probes",
            type=int,
            default=200,
            help="passes with one new Run, for pass_p50_ms/pass_p99_ms",
        )
        scheduler.add_argument("--page-size", type=int, default=None, help="PassOptions.page_size")
        scheduler.add_argument(
            "--bind-batch", type=int, default=None, help="PassOptions.bind_batch"
        )

        runs = targets.add_parser(
            "runs", help="end-to-end Run latency vs a bare Celery round trip", description=RUNS_HELP
        )
        runs.add_argument(
            "--count", type=int, required=True, help="measured Runs (and echo round trips)"
        )
        runs.add_argument(
            "--concurrency",
            type=int,
            required=True,
            help="client threads: Runs (round trips) in flight at once",
        )
        runs.add_argument(
            "--namespace",
            default="bench-runs",
            help="the namespace to (re)create; its leftovers are deleted first",
        )
        runs.add_argument(
            "--warmup",
            type=int,
            default=None,
            help="unmeasured Runs and round trips first (default max(5, 2*C))",
        )
        runs.add_argument(
            "--poll-ms",
            type=float,
            default=3.0,
            help="how often each client polls its Run (and the reply queue on "
            "a polling broker), in ms",
        )
        runs.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            help="seconds a Run may take before it counts as an error",
        )
        runs.add_argument(
            "--startup-timeout",
            type=float,
            default=120.0,
            help="seconds for the workers and pods to get ready",
        )
        runs.add_argument(
            "--keep",
            action="store_true",
            help="keep the namespace, its Runs and the bench user afterwards",
        )
        runs.add_argument(
            "--control-arg",
            action="append",
            default=[],
            metavar="ARG",
            help="append ARG to the control worker's command line (experiments, "
            "e.g. --control-arg=--prefetch-multiplier=4); repeatable",
        )
        runs.add_argument(
            "--no-beat",
            action="store_true",
            help="do not start beat (by default it runs, as under `up`, so a "
            "lost message is healed by its passes instead of hanging a Run)",
        )

        workflows = targets.add_parser(
            "workflows", help="end-to-end WorkflowRun latency", description=WORKFLOWS_HELP
        )
        workflows.add_argument("--count", type=int, required=True, help="measured WorkflowRuns")
        workflows.add_argument(
            "--concurrency",
            type=int,
            default=None,
            help="client threads: WorkflowRuns running at once (default: --count, all at once)",
        )
        workflows.add_argument(
            "--namespace",
            default="bench-workflows",
            help="the namespace to (re)create; its leftovers are deleted first",
        )
        workflows.add_argument(
            "--warmup", type=int, default=1, help="unmeasured WorkflowRuns first (default 1)"
        )
        workflows.add_argument(
            "--poll-ms",
            type=float,
            default=3.0,
            help="how often the watchers poll the WorkflowRuns' and the Runs' phases, in ms",
        )
        workflows.add_argument(
            "--timeout",
            type=float,
            default=120.0,
            help="seconds a WorkflowRun may take before it counts as an error",
        )
        workflows.add_argument(
            "--startup-timeout",
            type=float,
            default=120.0,
            help="seconds for the workers and pods to get ready",
        )
        workflows.add_argument(
            "--keep", action="store_true", help="keep the namespace and its objects afterwards"
        )
        workflows.add_argument(
            "--control-arg",
            action="append",
            default=[],
            metavar="ARG",
            help="append ARG to the control worker's command line; repeatable",
        )
        workflows.add_argument(
            "--no-beat",
            action="store_true",
            help="do not start beat (the controller then lives on events alone)",
        )

        invoke = targets.add_parser("invoke", help=INVOKE_HELP, description=INVOKE_HELP)
        invoke.add_argument(
            "--count", type=int, default=2000, help="measured invocations at C=1 and at C=N each"
        )
        invoke.add_argument(
            "--concurrency",
            type=int,
            default=16,
            help="clients at once in the second measure, each with its own function Run",
        )
        invoke.add_argument(
            "--namespace", default="bench-invoke", help="the namespace to (re)create"
        )
        invoke.add_argument(
            "--warmup", type=int, default=None, help="unmeasured invocations per client first"
        )
        invoke.add_argument(
            "--web-workers", type=int, default=2, help="web server processes (the gateway's)"
        )
        invoke.add_argument(
            "--startup-timeout", type=float, default=120.0, help="seconds for the processes"
        )
        invoke.add_argument("--keep", action="store_true", help="keep the namespace afterwards")
        invoke.add_argument(
            "--control-arg",
            action="append",
            default=[],
            metavar="ARG",
            help="append ARG to the control worker's command line",
        )
        invoke.add_argument("--no-beat", action="store_true", help="do not start beat")

        watch = targets.add_parser("watch", help=WATCH_HELP, description=WATCH_HELP)
        watch.add_argument("--watchers", type=int, required=True, help="watches held open")
        watch.add_argument("--writes", type=int, required=True, help="ConfigMap creates")
        watch.add_argument(
            "--rate", type=float, default=50.0, help="writes per second (0: as fast as possible)"
        )
        watch.add_argument(
            "--namespace",
            default="bench-watch",
            help="the namespace to (re)create; its ConfigMaps are deleted first",
        )

        add_watch_open_arguments(
            targets.add_parser("watch-open", help=WATCH_OPEN_HELP, description=WATCH_OPEN_HELP)
        )

    def handle(self, *args, target, **options) -> None:
        if settings.DEBUG:
            self.stderr.write("warning: DEBUG=True records every query; numbers are slower")
        if target == "watch":
            self.handle_watch(**options)
        elif target == "watch-open":
            self.handle_watch_open(**options)
        elif target == "runs":
            self.handle_runs(**options)
        elif target == "workflows":
            self.handle_workflows(**options)
        elif target == "invoke":
            self.handle_invoke(**options)
        elif target == "idle":
            from benchmarks.idle import run_idle_bench

            result = run_idle_bench(
                options["finished"], options["pending"], self.log, keep=options["keep"]
            )
            self.stdout.write(json.dumps(result))
        elif target == "api":
            from benchmarks.api import run_api_bench

            result = run_api_bench(
                options["objects"], self.log, repeats=options["repeats"], keep=options["keep"]
            )
            self.stdout.write(json.dumps(result))
        else:
            self.handle_scheduler(**options)

    def handle_watch(self, *, watchers, writes, rate, namespace, **options) -> None:
        from benchmarks.watch import WatchBenchOptions, run_watch_bench

        if watchers < 1 or writes < 1:
            raise CommandError("--watchers and --writes must be at least 1")
        self.log(f"bench watch: {watchers} watches, {writes} writes at {rate}/s")
        result = run_watch_bench(
            WatchBenchOptions(watchers=watchers, writes=writes, rate=rate, namespace=namespace),
            self.log,
        )
        self.stdout.write(json.dumps(result))
        if result["events_lost"] or result["duplicates"]:
            raise CommandError(
                f"{result['events_lost']} events lost, {result['duplicates']} duplicated"
            )

    def handle_watch_open(self, **options) -> None:
        from benchmarks.watch_open import WatchOpenError, WatchOpenOptions, run_watch_open_bench

        fields = {k: options[k] for k in WatchOpenOptions.__dataclass_fields__ if k in options}
        try:
            bench = WatchOpenOptions(**fields)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.log(f"bench watch-open: {bench.watches} watches of {bench.objects} ConfigMaps")
        try:
            result = interruptible(lambda abort: run_watch_open_bench(bench, self.log))
        except WatchOpenError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(result))
        self.stdout.flush()
        if result["events_lost"] or result["opened"] < bench.watches:
            raise CommandError(
                f"{bench.watches - result['opened']} watches did not open, "
                f"{result['events_lost']} lost the event: {result['errors']}"
            )

    def log(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()

    def handle_scheduler(
        self,
        *,
        runs,
        pods,
        affinity,
        workspaces,
        namespace,
        keep,
        probes,
        page_size,
        bind_batch,
        **options,
    ) -> None:
        from benchmarks.measure import run_scheduler_bench
        from benchmarks.workload import Workload
        from scheduling.scheduler import PassOptions

        try:
            work = Workload(
                namespace=namespace,
                runs=runs,
                pods=pods,
                affinity=affinity,
                workspaces=workspaces,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        pass_options = PassOptions()
        if page_size:
            pass_options.page_size = page_size
        if bind_batch:
            pass_options.bind_batch = bind_batch
        vendor = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        self.log(
            f"bench scheduler: {runs} Runs on {pods} pods, affinity {affinity}, "
            f"{workspaces} workspaces, database {vendor}"
        )
        result = run_scheduler_bench(
            work, probes=probes, keep=keep, options=pass_options, log=self.log
        )
        bound, pending_left = result.pop("bound"), result.pop("pending_left")
        self.stdout.write(json.dumps(result))
        if pending_left:
            raise CommandError(f"{pending_left} of {runs} Runs were left Pending ({bound} bound)")

    def handle_runs(
        self, *, count, concurrency, timeout, no_beat, control_arg, poll_ms, **options
    ) -> None:
        from benchmarks.runs import RunsOptions, run_runs_bench

        self._processes_bench(
            RunsOptions,
            run_runs_bench,
            subdir="bench-runs",
            what=lambda bench: f"bench runs: {count} Runs, concurrency {concurrency}",
            failure="Run(s) or round trip(s) failed",
            control_arg=control_arg,
            no_beat=no_beat,
            fields=dict(
                count=count,
                concurrency=concurrency,
                run_timeout=timeout,
                poll=poll_ms / 1000,
                **_common(options),
            ),
        )

    def handle_workflows(
        self, *, count, concurrency, timeout, no_beat, control_arg, poll_ms, **options
    ) -> None:
        from benchmarks.workflows import STEPS, WorkflowsOptions, run_workflows_bench

        self._processes_bench(
            WorkflowsOptions,
            run_workflows_bench,
            subdir="bench-workflows",
            what=lambda bench: (
                f"bench workflows: {count} WorkflowRuns of {len(STEPS)} steps, "
                f"concurrency {bench.concurrency}"
            ),
            failure="WorkflowRun(s) did not succeed",
            control_arg=control_arg,
            no_beat=no_beat,
            fields=dict(
                count=count,
                concurrency=concurrency,
                timeout=timeout,
                poll=poll_ms / 1000,
                **_common(options),
            ),
        )

    def handle_invoke(
        self, *, count, concurrency, no_beat, control_arg, web_workers, **options
    ) -> None:
        from benchmarks.invoke import InvokeOptions, run_invoke_bench

        self._processes_bench(
            InvokeOptions,
            run_invoke_bench,
            subdir="bench-invoke",
            what=lambda bench: f"bench invoke: {count} invocations at C=1 and at C={concurrency}",
            failure="invocation(s) failed",
            control_arg=control_arg,
            no_beat=no_beat,
            fields=dict(
                count=count, concurrency=concurrency, web_workers=web_workers, **_common(options)
            ),
        )

    def _processes_bench(
        self, options_class, run, *, subdir, what, failure, control_arg, no_beat, fields
    ) -> None:
        """The benches on real processes: their options, a header line, the run (Ctrl-C and
        SIGTERM stop it cleanly), one JSON line, and a non-zero exit when anything failed."""
        from benchmarks.runs import format_line

        control, beat = control_argvs(subdir, control_arg, no_beat)
        try:
            bench = options_class(control_argv=control, beat_argv=beat, **fields)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        database = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        broker = settings.CELERY_BROKER_URL.split(":", 1)[0]
        self.log(f"{what(bench)}, database {database}, broker {broker}")
        result = interruptible(lambda abort: run(bench, log=self.log, abort=abort))
        self.stdout.write(format_line(result))
        self.stdout.flush()
        if result["errors"]:
            raise CommandError(f"{result['errors']} {failure} (see the progress above)")


def _common(options: dict) -> dict:
    """The options every processes bench takes as they are."""
    return {
        key: options[key]
        for key in ("namespace", "warmup", "startup_timeout", "keep")
        if key in options
    }


def control_argvs(subdir: str, extra: list[str], no_beat: bool) -> tuple[list[str], list[str]]:
    """The control worker's and beat's command lines of ``up`` (beat with its own pidfile: a
    running ``up`` keeps beat.pid); no beat: an empty one."""
    from portal.management.commands.up import control_plane

    children = {c.name: c for c in control_plane(0, "127.0.0.1")}
    beat = list(children["beat"].argv)
    beat[beat.index("--pidfile") + 1] = str(settings.DATA_DIR / subdir / "beat.pid")
    return [*children["control-worker"].argv, *extra], [] if no_beat else beat


def interruptible(bench: Callable[[threading.Event], dict]) -> dict:
    """Run a processes bench with SIGTERM as Ctrl-C; its failures as one-line CommandErrors."""
    from benchmarks.runs import BenchError
    from benchmarks.stack import StackError

    abort = threading.Event()
    restore = None
    if threading.current_thread() is threading.main_thread():

        def on_term(signum, frame):
            raise KeyboardInterrupt

        restore = signal.signal(signal.SIGTERM, on_term)
    try:
        return bench(abort)
    except KeyboardInterrupt:
        raise CommandError("interrupted; every child was stopped") from None
    except (BenchError, StackError) as exc:
        raise CommandError(str(exc)) from None
    finally:
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)


def add_watch_open_arguments(parser) -> None:
    parser.add_argument("--watches", type=int, required=True, help="watches opened at once")
    parser.add_argument(
        "--objects",
        type=int,
        default=100,
        help="ConfigMaps in the namespace (each watch's initial events)",
    )
    parser.add_argument("--namespace", default="bench-watch-open")
    parser.add_argument("--url", default="", help="a running server (default: start one)")
    parser.add_argument(
        "--token",
        default="",
        help="with --url: a bearer token (default: a superuser's, made in the configured database)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="web workers of the server started (default KRUNTIMES_WEB_WORKERS)",
    )
    parser.add_argument(
        "--openings",
        type=int,
        default=None,
        help="KRUNTIMES_WATCH_OPENINGS of the server started (0: no gate; default: the setting)",
    )
    parser.add_argument("--baseline", type=float, default=3.0, help="seconds probed before")
    parser.add_argument("--after", type=float, default=2.0, help="seconds probed once open")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between probes")
    parser.add_argument("--open-timeout", type=float, default=120.0)
