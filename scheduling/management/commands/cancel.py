"""``manage.py cancel NAME... [-n NAMESPACE]``: set ``spec.cancelRequested`` on Runs.

The same write the API's PATCH and the admin's Cancel action make: a Pending Run ends
Cancelled at once; a bound one is killed on its pod (its whole process group) and ends
Cancelled. Cancelling a finished Run changes nothing.
"""

from django.core.management.base import BaseCommand, CommandError

from portal import cli
from portal.machinery import store
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from scheduling.models import Run


class Command(BaseCommand):
    help = "Cancel Runs: a Pending Run ends at once, a running one is killed."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="+", metavar="NAME", help="the Runs' names")
        parser.add_argument("-n", "--namespace", default="default")
        cli.add_identity_arguments(parser)

    def handle(self, *args, names, namespace, **options):
        kind = registry.for_model(Run)
        try:
            context = store.WriteContext(user=cli.identity_of(options))
        except cli.CLIError as exc:
            raise cli.abort(self.stderr, exc, "nothing was cancelled") from None
        failed = 0
        for name in names:
            try:
                self.stdout.write(self._cancel(kind, namespace, name, context))
            except StatusError as exc:
                failed += 1
                cli.report(self.stderr, exc)
        if failed:
            raise CommandError(f"{failed} error(s) while cancelling", returncode=1)

    @staticmethod
    def _cancel(kind, namespace: str, name: str, context: store.WriteContext) -> str:
        run = store.get_object(kind, namespace, name)
        if run.is_terminal:
            return f"run.kruntimes.io/{name} already ended ({run.phase})"
        if run.cancel_requested:
            return f"run.kruntimes.io/{name} cancel already requested"
        store.patch(kind, namespace, name, {"spec": {"cancelRequested": True}}, context=context)
        return f"run.kruntimes.io/{name} cancel requested"
