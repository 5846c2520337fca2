"""``manage.py kubeconfig --user NAME``: print a kubeconfig for that user (the data dir's CA,
the user's API token), for kubectl or a Kubernetes client against ``manage.py up --tls``."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from portal.kubeconfig import DEFAULT_SERVER, for_user


class Command(BaseCommand):
    help = "Print a kubeconfig for a user: the portal's CA and the user's API token."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user", required=True, help="the portal user it authenticates as")
        parser.add_argument("--server", default=DEFAULT_SERVER, help="the portal's HTTPS URL")
        parser.add_argument("-n", "--namespace", default="", help="the context's namespace")
        parser.add_argument(
            "--create-user",
            action="store_true",
            help="create the user (no password, no RBAC grant) if it does not exist",
        )

    def handle(self, *args, user: str, server: str, namespace: str, create_user: bool, **opts):
        users = get_user_model()
        found = users.objects.filter(username=user).first()
        if found is None:
            if not create_user:
                raise CommandError(f'user "{user}" does not exist; pass --create-user to create it')
            found = users.objects.create_user(user)
            found.set_unusable_password()
            found.save(update_fields=["password"])
        self.stdout.write(for_user(found, server=server, namespace=namespace), ending="")
