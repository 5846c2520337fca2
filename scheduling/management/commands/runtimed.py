"""``manage.py runtimed --runtime NAME``: run one local Runtime Pod by hand, in the foreground."""

from __future__ import annotations

import os
import subprocess

from django.core.management.base import BaseCommand, CommandError

from scheduling.models import Runtime
from scheduling.providers import local


class Command(BaseCommand):
    help = "Run one Runtime Pod (a runtimed worker) for a Runtime until Ctrl-C."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--runtime", required=True)
        parser.add_argument("-n", "--namespace", default="default")

    def handle(self, *args, runtime: str, namespace: str, **options) -> None:
        if not Runtime.objects.filter(namespace=namespace, name=runtime).exists():
            raise CommandError(
                f'runtimes.kruntimes.io "{runtime}" not found in namespace "{namespace}"'
            )
        pod = local.new_identity(namespace, runtime)
        capacity = local.register(pod)
        self.stdout.write(
            f"Runtime Pod {pod.name} (uid {pod.uid}) for {namespace}/{runtime}; "
            f"workspace {pod.workspace}"
        )
        try:
            subprocess.run(
                local.runtimed_argv(), env={**os.environ, **local.pod_env(pod, capacity)}
            )
        except KeyboardInterrupt:
            pass
        finally:
            local.unregister(pod)
