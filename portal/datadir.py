"""The embedded default's data directory, made by the entry points rather than by settings.

Importing ``portal.settings`` creates no file: a linter, a type checker or ``import`` in a shell
leaves the disk alone. ``manage.py``, the WSGI app, the Celery app and the test session call
``ensure_data_dir()`` once before they touch the database or the broker; it makes
``KRUNTIMES_DATA_DIR`` with the folders the settings name (static files, the filesystem broker).

The per-installation secret key of the embedded default is read (and made, 0600) the first time
Django signs something, by ``secret_key()``: production sets ``SECRET_KEY`` and never gets here.
"""

from __future__ import annotations

import os
import tempfile
from functools import cache
from pathlib import Path

from django.conf import settings
from django.utils.functional import lazy


def ensure_data_dir() -> None:
    """Create ``DATA_DIR`` and the folders under it the settings list (idempotent)."""
    for folder in settings.KRUNTIMES_DATA_FOLDERS:
        Path(folder).mkdir(parents=True, exist_ok=True)


@cache
def _read_or_make_key(path: str) -> str:
    key_file = Path(path)
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.parent.mkdir(parents=True, exist_ok=True)
        # written aside with 0600, then linked into place: two processes starting at once
        # agree on the first key linked, and neither reads a half-written file
        # (a name of its own per caller: threads of one process race here too)
        fd, aside_name = tempfile.mkstemp(prefix=f".{key_file.name}.", dir=key_file.parent)
        aside = Path(aside_name)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(get_random_secret_key())
        try:
            os.link(aside, key_file)
        except FileExistsError:
            pass
        finally:
            aside.unlink()
    return key_file.read_text().strip()


def secret_key(path: Path):
    """A lazy str: the key in ``path``, made with mode 0600 on first use."""
    return lazy(_read_or_make_key, str)(str(path))
