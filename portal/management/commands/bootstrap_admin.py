"""Create the first admin user (printing its password once) and its API token."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create a superuser with a generated password (if missing) and print its API token."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--email", default="admin@localhost")
        parser.add_argument("--port", type=int, default=8000, help="the port up serves on")
        parser.add_argument("--bind", default="127.0.0.1", help="the address up binds")

    def handle(self, *args, username: str, email: str, port: int, bind: str, **options) -> None:
        from portal.management.commands.demo import server_url

        users = get_user_model()
        user = users.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            user = users.objects.create_superuser(username, email, password)
            self.stdout.write(f"created superuser {username!r} with password: {password}")
        else:
            self.stdout.write(
                f"superuser {username!r} exists; password unchanged "
                f"(reset it with: manage.py changepassword {username})"
            )
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(f"API token for {username!r}: {token.key}")
        ca = settings.DATA_DIR / "tls" / "ca.crt"
        self.stdout.write(  # make demo serves up --tls
            f"  curl --cacert {ca} -H 'Authorization: Bearer {token.key}' "
            f"{server_url(bind, port)}/apis"
        )
