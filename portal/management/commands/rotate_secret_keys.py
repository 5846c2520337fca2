"""``manage.py rotate_secret_keys``: rewrite every Secret's data with the first key."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from portal import encryption
from portal.machinery.errors import StatusError
from portal.models import Secret

BATCH = 500


class Command(BaseCommand):
    help = (
        "Re-encrypt every Secret with the first key of KRUNTIMES_SECRET_ENCRYPTION_KEYS "
        "(after putting a new key first; any listed key still decrypts the old rows)."
    )

    def handle(self, *args, **options) -> None:
        if not encryption.enabled():
            raise self._fail("KRUNTIMES_SECRET_ENCRYPTION_KEYS is empty: nothing to encrypt with")
        rewritten, after = 0, 0
        while True:
            pks = list(
                Secret.objects.filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)
            )[:BATCH]
            if not pks:
                break
            for pk in pks:
                rewritten += self._rewrite(pk)
            after = pks[-1]
        self.stdout.write(f"rewrote {rewritten} secrets with the first key")

    def _fail(self, message: str) -> CommandError:
        self.stderr.write(f"error: {message}")
        return CommandError(message, returncode=1)

    def _rewrite(self, pk: int) -> int:
        try:
            secret = Secret.objects.filter(pk=pk).first()
        except StatusError as exc:  # no configured key decrypts it (the message shows no data)
            label = Secret.objects.filter(pk=pk).values_list("namespace", "name").first()
            where = "/".join(label) if label else str(pk)
            raise self._fail(f"secret {where}: {exc.message}") from None
        if secret is None:
            return 0  # deleted meanwhile
        # The same content re-encrypted, only if no write came in between (such a write
        # already used the first key): a concurrent change is never overwritten.
        return Secret.objects.filter(pk=pk, resource_version=secret.resource_version).update(
            data=secret.data
        )
