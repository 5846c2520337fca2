"""``manage.py delete KIND NAME... [-n NS] [--cascade=...]`` and ``manage.py delete -f FILE``."""

from django.core.management.base import BaseCommand, CommandError

from portal import cli


class Command(BaseCommand):
    help = "Delete objects by kind and name, or those named in manifests, like kubectl delete."

    def add_arguments(self, parser):
        parser.add_argument(
            "resources",
            nargs="*",
            metavar="KIND NAME",
            help="KIND[,KIND...] NAME ... or KIND/NAME ...",
        )
        parser.add_argument(
            "-f",
            "--filename",
            action="append",
            dest="filenames",
            default=[],
            metavar="FILE",
            help="a file, a directory of manifests, or - (stdin)",
        )
        parser.add_argument("-R", "--recursive", action="store_true")
        parser.add_argument("-n", "--namespace")
        parser.add_argument(
            "--cascade",
            default="background",
            choices=sorted(cli.PROPAGATION),
            help="dependents: background (default), foreground or orphan",
        )
        cli.add_identity_arguments(parser)

    def handle(self, *args, resources, filenames, recursive, namespace, cascade, **options):
        try:
            user = cli.identity_of(options)
            targets, problems = cli.delete_targets(resources, filenames, namespace, recursive)
        except cli.CLIError as exc:
            raise cli.abort(self.stderr, exc, "nothing was deleted") from None
        for line in problems:
            self.stderr.write(line)
        failed = len(problems)
        for target in targets:
            try:
                self.stdout.write(cli.delete_target(target, cascade, user))
            except cli.CLIError as exc:
                failed += 1
                cli.report(self.stderr, exc)
        if failed:
            raise CommandError(f"{failed} error(s) while deleting", returncode=1)
