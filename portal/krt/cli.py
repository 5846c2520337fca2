"""``krt`` (also installed as ``kubectl-kruntimes``, so ``kubectl kruntimes …`` works): the
portal's CLI for a user's laptop. It talks to the Kubernetes-style API through a kubeconfig
only (``--kubeconfig``, ``--context``, ``-n``, ``--as``), never to the database, and imports
nothing of Django: ``krt --help`` starts in a fraction of a second.

Exit status: 0 success; 1 an error (one line on stderr, from the API's Status message); 2 a
usage error or a wait that timed out; ``run --wait`` exits with the step's own code (124
Timeout, 130 Cancelled, see ``runs``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from .errors import KrtError

EPILOG = """examples:
  krt run --runtime bash --wait -- sh -c 'echo hi; exit 3'
  krt run --runtime bash --file ./script.sh --env GREETING=hi
  krt logs -f RUN
  krt get runs -o wide
  krt wf run -f .github/workflows/ci.yaml --wait
  krt wf trigger ci-data-sharing-demo --set ref=main --wait
  krt artifacts get RUN dist.tgz -o dist.tgz

exit status: 0 done; 1 an error (one line on stderr); 2 a usage error or a --timeout
that passed; run --wait: the step's exit code (1 if it failed without one, 124 Timeout,
130 Cancelled)"""


def common_options() -> argparse.ArgumentParser:
    """Flags accepted before or after the subcommand (kubectl users put them anywhere)."""
    common = argparse.ArgumentParser(add_help=False)
    hide = argparse.SUPPRESS
    common.add_argument(
        "--kubeconfig", default=hide, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    common.add_argument("--context", default=hide, help="the kubeconfig context to use")
    common.add_argument(
        "-n", "--namespace", default=hide, help="namespace (default: the context's, else default)"
    )
    common.add_argument(
        "--as", dest="as_user", default=hide, metavar="USER", help="act as USER (impersonation)"
    )
    return common


def output_option(parser: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    parser.add_argument("-o", "--output", choices=choices, help="output format")


def build_parser(prog: str = "krt") -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog=prog,
        parents=[common],
        description="Run and inspect kruntimes Runs and WorkflowRuns through a kubeconfig.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help, description=help, **kwargs)

    run = command(
        "run", "Create a task Run (and with --wait, stream its log and exit with its code)."
    )
    run.add_argument("--runtime", required=True, help="the Runtime to run on (e.g. bash)")
    run.add_argument("--name", help="the Run's name (default: generated)")
    run.add_argument("--file", "-f", dest="file", help="a script to run (spec.source.inline)")
    run.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="an environment variable (repeatable)",
    )
    run.add_argument("--workspace", help="a PersistentWorkspace to mount")
    run.add_argument("--timeout", help="the Run's timeout (e.g. 30s, 5m)")
    run.add_argument(
        "--wait", action="store_true", help="stream the log until the Run ends; exit with its code"
    )
    output_option(run, ("json", "yaml", "name"))
    run.add_argument(
        "args", nargs="*", metavar="-- COMMAND [ARG...]", help="the command (spec.mode.task.args)"
    )

    logs = command("logs", "Print a Run's log (-f: follow it while it runs).")
    logs.add_argument("run")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.add_argument("--attempt", type=int, help="which attempt (default: the current one)")

    cancel = command("cancel", "Ask a Run to stop (spec.cancelRequested: true).")
    cancel.add_argument("run")

    for name, helptext in (
        ("get", "List objects, or show one (default: a table)."),
        ("ls", "List Runs (krt get runs)."),
    ):
        get = command(name, helptext)
        if name == "get":
            get.add_argument("type", help="runs, workflowruns, workflows, runtimes, ...")
        get.add_argument("name", nargs="?")
        output_option(get, ("json", "yaml", "name", "wide"))
        get.add_argument("-l", "--selector", help="label selector")
        get.add_argument("-A", "--all-namespaces", action="store_true")

    artifacts = command("artifacts", "Read a Run's artifacts.")
    art_sub = artifacts.add_subparsers(dest="artifacts_command", metavar="COMMAND", required=True)
    art_get = art_sub.add_parser(
        "get", parents=[common], help="Download an artifact (digest checked)."
    )
    art_get.add_argument("run")
    art_get.add_argument("artifact")
    art_get.add_argument(
        "-o", "--output", metavar="FILE", help="where to write it (default: its name; - for stdout)"
    )

    wf = command("wf", "Workflows: run a file, trigger a Workflow, show or rerun a WorkflowRun.")
    wf_sub = wf.add_subparsers(dest="wf_command", metavar="COMMAND", required=True)

    def wf_command(name: str, help: str) -> argparse.ArgumentParser:
        return wf_sub.add_parser(name, parents=[common], help=help, description=help)

    def wait_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--name", help="the WorkflowRun's name (default: generated)")
        p.add_argument(
            "--wait", action="store_true", help="follow it until it ends (exit 0 only if Succeeded)"
        )
        p.add_argument(
            "--timeout",
            type=float,
            metavar="S",
            help="with --wait: give up after S seconds (exit 2)",
        )
        output_option(p, ("json", "yaml", "name"))

    wf_run = wf_command(
        "run", "Create a WorkflowRun from a manifest or a GitHub Actions workflow file."
    )
    wf_run.add_argument(
        "-f", "--filename", required=True, metavar="FILE", help="the file (- for stdin)"
    )
    wf_run.add_argument(
        "--set", action="append", default=[], metavar="K=V", help="an input (repeatable)"
    )
    wait_options(wf_run)
    trig = wf_command("trigger", "Start a Workflow (a WorkflowRun with spec.workflowRef).")
    trig.add_argument("workflow")
    trig.add_argument(
        "--set", action="append", default=[], metavar="K=V", help="an input (repeatable)"
    )
    wait_options(trig)
    wf_get = wf_command("get", "Show a WorkflowRun's jobs and steps.")
    wf_get.add_argument("name")
    output_option(wf_get, ("json", "yaml"))
    wf_rerun = wf_command("rerun", "Run a WorkflowRun's jobs again, as a new WorkflowRun.")
    wf_rerun.add_argument("run", metavar="NAME")
    wf_rerun.add_argument(
        "--failed", action="store_true", help="only the jobs that did not succeed"
    )
    wf_rerun.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="K=V",
        help="an input to change (not with --failed)",
    )
    wait_options(wf_rerun)

    invoke = command("invoke", "Call a function Run's endpoint; print the response body.")
    invoke.add_argument("run")
    body = invoke.add_mutually_exclusive_group()
    body.add_argument("-d", "--data", help="the JSON body")
    body.add_argument("-f", "--file", help="a file with the JSON body (- for stdin)")
    invoke.add_argument("--invocation-id", help="sent as X-Kruntime-Invocation-ID")
    invoke.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds")
    return parser


def program_name(argv0: str) -> str:
    return "kubectl kruntimes" if os.path.basename(argv0).startswith("kubectl-") else "krt"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(program_name(sys.argv[0]))
    args = parser.parse_args(argv)
    from . import commands

    try:
        return commands.dispatch(args)
    except KrtError as exc:
        sys.stdout.flush()
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run() -> None:
    """The console script's entry point."""
    sys.exit(main())
