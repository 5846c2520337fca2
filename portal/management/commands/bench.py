"""``manage.py bench scheduler --runs N --pods P [--affinity MODE] [--namespace NS] [--keep]``.

Benchmarks the scheduler on the configured database (settings DATABASE_URL) and prints ONE
JSON line to stdout; progress goes to stderr. The logic lives in ``scheduling.bench``.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Benchmark the scheduler: bind N pending Runs onto P Runtime Pods in a fresh "
            "namespace and print one JSON line (bound_per_s, pass p50/p99, floor_s...).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("target", choices=["scheduler"], help="what to benchmark")
        parser.add_argument("--runs", type=int, required=True, help="pending Runs to bind")
        parser.add_argument("--pods", type=int, required=True, help="ready Runtime Pods")
        parser.add_argument("--affinity", default="none",
                            choices=["none", "required", "preferred", "anti"])
        parser.add_argument("--namespace", default="bench",
                            help="the namespace to (re)create; its leftovers are deleted first")
        parser.add_argument("--keep", action="store_true",
                            help="keep the namespace and its objects afterwards")
        parser.add_argument("--probes", type=int, default=200,
                            help="passes with one new Run, for pass_p50_ms/pass_p99_ms")
        parser.add_argument("--page-size", type=int, default=None, help="PassOptions.page_size")
        parser.add_argument("--bind-batch", type=int, default=None,
                            help="PassOptions.bind_batch")

    def handle(self, *args, target, runs, pods, affinity, namespace, keep, probes,
               page_size, bind_batch, **options) -> None:
        from scheduling.bench import Workload, run_scheduler_bench
        from scheduling.scheduler import PassOptions

        try:
            work = Workload(namespace=namespace, runs=runs, pods=pods, affinity=affinity)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        pass_options = PassOptions()
        if page_size:
            pass_options.page_size = page_size
        if bind_batch:
            pass_options.bind_batch = bind_batch
        if settings.DEBUG:
            self.stderr.write("warning: DEBUG=True records every query; numbers are slower")

        def log(line: str) -> None:
            self.stderr.write(line)
            self.stderr.flush()

        vendor = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        log(f"bench {target}: {runs} Runs on {pods} pods, affinity {affinity}, "
            f"database {vendor}")
        result = run_scheduler_bench(work, probes=probes, keep=keep, options=pass_options,
                                     log=log)
        bound, pending_left = result.pop("bound"), result.pop("pending_left")
        self.stdout.write(json.dumps(result))
        if pending_left:
            raise CommandError(f"{pending_left} of {runs} Runs were left Pending "
                               f"({bound} bound)")
