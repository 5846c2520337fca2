"""``manage.py logs NAME [-n NAMESPACE] [-f] [--attempt N] [--tail N]``, like kubectl logs."""

from django.core.management.base import BaseCommand

from portal import cli
from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from scheduling import logs
from scheduling.models import Run


class Command(BaseCommand):
    help = "Print the output of a Run's attempt; -f follows it until the Run ends."
    follow_policy = logs.DEFAULT_FOLLOW  # tests inject a zero poll interval

    def add_arguments(self, parser):
        parser.add_argument("name", help="the Run's name")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument(
            "-f",
            "--follow",
            action="store_true",
            help="keep printing new output until the Run ends",
        )
        parser.add_argument("--attempt", type=int, help="which attempt (default: the current)")
        parser.add_argument(
            "--tail", type=int, default=None, metavar="N", help="only the last N lines"
        )

    def handle(self, *args, name, namespace, follow, attempt, tail, **options):
        try:
            run = store.get_object(registry.for_model(Run), namespace, name)
            attempt = self._attempt(run, attempt)
            if tail is not None and tail < 0:
                raise cli.CLIError.client("--tail must be >= 0")
        except (StatusError, cli.CLIError) as exc:
            raise cli.abort(self.stderr, exc, "logs failed") from None
        if not follow:
            self.stdout.write(logs.read_log(run, attempt, tail_lines=tail).text, ending="")
            return
        try:
            for piece in logs.follow_log(run, attempt, tail_lines=tail, policy=self.follow_policy):
                self.stdout.write(piece, ending="")
                self.stdout.flush()
        except KeyboardInterrupt:  # Ctrl-C ends a follow quietly, like kubectl
            return

    @staticmethod
    def _attempt(run: Run, attempt: int | None) -> int:
        if attempt is None:
            return run.attempt
        if not 1 <= attempt <= run.attempt:
            raise cli.CLIError.client(
                f'attempt {attempt} of Run "{run.name}" does not exist: '
                f"the Run is at attempt {run.attempt}"
            )
        return attempt
