"""Secret data at rest: Fernet-encrypted when ``KRUNTIMES_SECRET_ENCRYPTION_KEYS`` is set.

``MultiFernet`` over the configured keys: the first key encrypts, every key decrypts, so a key
is rotated by putting the new one first (and ``manage.py rotate_secret_keys`` rewrites the
rows with it) before the old one is dropped. An encrypted column value starts with ``PREFIX``;
a value without it is plain JSON (a row written before any key was set), read as it is.
The encryption lives in the model field, so every write path (the store, its compare-and-set
UPDATE) stores ciphertext without knowing.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

from portal.machinery.errors import StatusError

PREFIX = "kruntimes:fernet:v1:"


class SecretDecryptionError(StatusError):
    """Stored Secret data no configured key decrypts (the message never holds the data)."""


def _keys() -> tuple[str, ...]:
    return tuple(k.strip() for k in settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS if k.strip())


@lru_cache(maxsize=8)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    fernets = []
    for index, key in enumerate(keys):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            raise ImproperlyConfigured(
                f"KRUNTIMES_SECRET_ENCRYPTION_KEYS entry {index + 1} is not a Fernet key "
                "(32 url-safe base64-encoded bytes; make one with "
                "cryptography.fernet.Fernet.generate_key())"
            ) from None
    return MultiFernet(fernets)


def enabled() -> bool:
    return bool(_keys())


def is_encrypted(text: str) -> bool:
    return text.startswith(PREFIX)


def encrypt_text(text: str) -> str:
    """``text`` encrypted with the first key (and prefixed), or as it is without keys."""
    keys = _keys()
    if not keys:
        return text
    return PREFIX + _fernet(keys).encrypt(text.encode("utf-8")).decode("ascii")


def decrypt_text(stored: str) -> str:
    if not is_encrypted(stored):
        return stored
    keys = _keys()
    if not keys:
        raise SecretDecryptionError(
            500,
            "InternalError",
            "stored Secret data is encrypted but KRUNTIMES_SECRET_ENCRYPTION_KEYS is empty: "
            "configure the key it was written with",
        )
    try:
        return _fernet(keys).decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError):
        raise SecretDecryptionError(
            500,
            "InternalError",
            "stored Secret data cannot be decrypted with any key in "
            "KRUNTIMES_SECRET_ENCRYPTION_KEYS: was the key it was written with removed?",
        ) from None


class EncryptedJSONField(models.TextField):
    """A JSON object kept in a text column, encrypted there when keys are configured."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(decrypt_text(value))

    def to_python(self, value: Any) -> Any:
        return json.loads(decrypt_text(value)) if isinstance(value, str) else value

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return encrypt_text(json.dumps(value, sort_keys=True, separators=(",", ":")))

    def value_to_string(self, obj: Any) -> str:
        return json.dumps(self.value_from_object(obj))
