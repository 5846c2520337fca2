"""``manage.py run-workflow NAME [-n NS] [--input k=v ...] [--name N] [--wait] [--timeout S]``:
start a Workflow (the same write as ``POST workflows/<name>/run``, as ``--as`` or the local
operator).

With ``--wait`` it follows the WorkflowRun, printing its job/step table whenever it changes,
then ``WorkflowRun <name> <phase>``; the exit status is 0 only when it Succeeded, 1 when it
ended otherwise (or could not be started), 2 when ``--timeout`` seconds passed first.
"""

from django.core.management.base import BaseCommand, CommandError

from portal import cli
from portal.machinery import store
from portal.machinery.admission import authorize
from portal.machinery.errors import StatusError
from workflows import starting, waiting
from workflows.models import WorkflowRunPhase

TIMED_OUT = 2


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    inputs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise cli.CLIError.client(f'--input "{pair}": expected NAME=VALUE')
        inputs[key] = value
    return inputs


class Command(BaseCommand):
    help = "Start a Workflow: create a WorkflowRun of it, and optionally wait for it to end."

    def add_arguments(self, parser):
        parser.add_argument("workflow", metavar="NAME", help="the Workflow's name")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument(
            "--input", dest="inputs", action="append", default=[], metavar="NAME=VALUE"
        )
        parser.add_argument(
            "--name", default="", help="the WorkflowRun's name (default: generated)"
        )
        parser.add_argument("--wait", action="store_true", help="follow it until it ends")
        parser.add_argument(
            "--timeout", type=float, default=0, metavar="S", help="with --wait: give up after S s"
        )
        cli.add_identity_arguments(parser)

    def handle(self, *args, workflow, namespace, inputs, name, wait, timeout, **options):
        kind = starting.workflow_run_kind()
        try:
            context = store.WriteContext(user=cli.identity_of(options))
            values = parse_inputs(inputs)
            if wait:  # a run the caller could not follow is not started
                authorize(context, kind, "get", namespace)
            run = starting.start(
                namespace,
                workflow,
                inputs=values,
                metadata={"name": name} if name else None,
                context=context,
            )
        except (cli.CLIError, StatusError) as exc:
            raise cli.abort(self.stderr, exc, "no WorkflowRun was created") from None
        self.stdout.write(f"workflowrun.kruntimes.io/{run.name} created")
        if not wait:
            return
        started = waiting.monotonic()
        try:
            run, finished = waiting.wait(run, self.stdout.write, timeout=timeout)
        except StatusError as exc:
            raise cli.abort(self.stderr, exc, "the WorkflowRun is gone") from None
        if finished:
            self.stdout.write(f"finished in {waiting.monotonic() - started:.1f}s")
        self.stdout.write(f"WorkflowRun {run.name} {run.phase}")
        if not finished:
            self.stderr.write(f"error: timed out after {timeout:g}s waiting for {run.name}")
            raise CommandError("timed out", returncode=TIMED_OUT)
        if run.phase != WorkflowRunPhase.SUCCEEDED:
            raise CommandError(f"WorkflowRun {run.name} {run.phase}", returncode=1)
