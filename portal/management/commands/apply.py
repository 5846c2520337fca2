"""``manage.py apply -f FILE|DIR|- [-f ...] [-R] [-n NS] [--dry-run]``: kubectl apply."""

from django.core.management.base import BaseCommand, CommandError

from portal import cli
from portal.machinery import admission_warnings


class Command(BaseCommand):
    help = "Create or update objects from manifests (YAML or JSON; files, directories or stdin)."

    def add_arguments(self, parser):
        parser.add_argument(
            "-f",
            "--filename",
            action="append",
            dest="filenames",
            required=True,
            metavar="FILE",
            help="a file, a directory of manifests, or - (stdin)",
        )
        parser.add_argument(
            "-R",
            "--recursive",
            action="store_true",
            help="walk directories given with -f recursively",
        )
        parser.add_argument("-n", "--namespace", help="the namespace of namespaced objects")
        parser.add_argument(
            "--dry-run",
            nargs="?",
            const="client",
            default="none",
            choices=("none", "client", "server"),
            help="validate and report, write nothing",
        )
        cli.add_identity_arguments(parser)

    def handle(self, *args, filenames, recursive, namespace, dry_run, **options):
        try:
            user = cli.identity_of(options)
            documents, problems = cli.read_documents(filenames, recursive=recursive)
            if not documents and not problems:
                raise cli.CLIError.client("no objects passed to apply")
        except cli.CLIError as exc:
            raise cli.abort(self.stderr, exc, "nothing was applied") from None
        for line in problems:
            self.stderr.write(line)
        failed = len(problems)
        suffix = cli.dry_run_suffix(dry_run)
        for document in cli.namespaces_first(documents):
            try:
                with admission_warnings.recording() as warnings:
                    line = cli.apply_document(
                        document, namespace=namespace, dry_run=dry_run != "none", user=user
                    )
            except cli.CLIError as exc:
                failed += 1
                cli.report(self.stderr, exc)
                continue
            for text in warnings:  # as kubectl prints the API's Warning headers
                self.stderr.write(f"Warning: {text}")
            self.stdout.write(line + suffix)
        if failed:
            raise CommandError(f"{failed} error(s) while applying", returncode=1)
