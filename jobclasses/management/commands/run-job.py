"""``manage.py run-job -f job.yaml [-n NS] --dry-run``: print the batch Job and every call a
Job on a Kubernetes JobClass would make (``jobclasses.dryrun``), making none."""

from django.core.management.base import BaseCommand, CommandError

from jobclasses.dryrun import DryRunRefused, print_dry_run
from portal import cli


class Command(BaseCommand):
    help = "Print what a Job on a Kubernetes JobClass would create and call (--dry-run)."

    def add_arguments(self, parser):
        parser.add_argument(
            "-f",
            "--filename",
            required=True,
            metavar="FILE",
            help="the Job manifest (YAML or JSON), or - (stdin)",
        )
        parser.add_argument(
            "-n",
            "--namespace",
            default="default",
            help="the Job's namespace when its manifest names none",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            required=True,
            help="print the batch Job and every call instead of making them",
        )

    def handle(self, *args, filename, namespace, dry_run, **options):
        documents, problems = cli.read_documents([filename], recursive=False)
        jobs = [d for d in documents if (d.manifest or {}).get("kind") == "Job"]
        if problems or len(jobs) != 1:
            for line in problems:
                self.stderr.write(line)
            raise CommandError(f"{filename}: expected exactly one Job manifest", returncode=1)
        try:
            recorded = print_dry_run(jobs[0].manifest, namespace, self.stdout)
        except DryRunRefused as exc:
            raise CommandError(str(exc), returncode=1) from None
        if recorded["phase"] != "Succeeded":
            raise CommandError(
                f"the dry run ended {recorded['phase']}: {recorded['message']}", returncode=1
            )
