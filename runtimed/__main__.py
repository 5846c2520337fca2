"""``python -m runtimed [--concurrency N]``: the worker of the Runtime Pod configured in the
environment (see ``runtimed.config``)."""

from __future__ import annotations

import argparse
import atexit
import os
import sys

from .app import build
from .config import ConfigError, PodConfig
from .procgroup import become_subreaper, kill_live_groups


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m runtimed", description="the per-Runtime-Pod Celery worker"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="tasks executed at once (default: the pod's `runs` capacity + 1, "
        "the spare slot serving cancels)",
    )
    parser.add_argument("--loglevel", default=os.environ.get("LOG_LEVEL", "INFO"))
    args = parser.parse_args(argv)
    if args.concurrency is not None and args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    return args


def worker_argv(config: PodConfig, concurrency: int, loglevel: str) -> list[str]:
    return [
        "worker",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "--queues",
        config.queue,
        "--hostname",
        f"{config.pod_name}@%h",
        "--loglevel",
        loglevel,
        # each pod is on its own: no need to sync with or gossip about other workers
        "--without-mingle",
        "--without-gossip",
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = PodConfig.from_env()
    except ConfigError as exc:
        print(f"runtimed: {exc}", file=sys.stderr)
        return 2
    become_subreaper()  # orphans of steps come back to us, to be killed and reaped
    atexit.register(kill_live_groups)  # a cold shutdown must not leave steps running
    runtimed = build(config)
    # one slot more than the Runs it may hold: a cancel must get through while all slots run
    concurrency = args.concurrency or config.runs_capacity + 1
    # celery-types says NoReturn; Celery.start returns the command's exit code (or None)
    code: int | None = runtimed.app.start(worker_argv(config, concurrency, args.loglevel))
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
