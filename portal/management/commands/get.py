"""``manage.py get KIND [NAME ...] [-n NS | -A] [-o yaml|json|wide|name] [-l SELECTOR]``."""

from django.core.management.base import BaseCommand, CommandError

from portal import cli


class Command(BaseCommand):
    help = "Display one or many objects, like kubectl get."

    def add_arguments(self, parser):
        parser.add_argument(
            "resources",
            nargs="+",
            metavar="KIND [NAME ...]",
            help="KIND[,KIND...] [NAME ...] or KIND/NAME ...",
        )
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("-n", "--namespace")
        scope.add_argument("-A", "--all-namespaces", action="store_true")
        parser.add_argument("-o", "--output", choices=cli.OUTPUT_FORMATS)
        parser.add_argument("-l", "--selector", default="", help="a label selector")
        cli.add_identity_arguments(parser)

    def handle(self, *args, resources, namespace, all_namespaces, output, selector, **options):
        found, failed = [], False
        try:
            user = cli.identity_of(options)
            groups, singular = cli.parse_resource_args(resources)
            if selector and any(group.names for group in groups):
                raise cli.CLIError.client("name cannot be provided when a selector is specified")
            for group in groups:
                objects, problems = cli.fetch(group, namespace, all_namespaces, selector, user)
                for line in problems:
                    self.stderr.write(line)
                failed = failed or bool(problems)
                found.append((group.kind, objects))
        except cli.CLIError as exc:
            raise cli.abort(self.stderr, exc, "get failed") from None
        listing = not any(group.names for group in groups)
        text = cli.render(
            found, output, singular=singular, all_namespaces=all_namespaces, listing=listing
        )
        if text:
            self.stdout.write(text, ending="")
        if listing and output in (None, "wide") and not any(objects for _, objects in found):
            self.stderr.write(
                cli.no_resources_message([g.kind for g in groups], namespace, all_namespaces)
            )
        if failed:
            raise CommandError("error(s) while getting resources", returncode=1)
