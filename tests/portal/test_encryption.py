"""Secret data at rest: encrypted with the first of KRUNTIMES_SECRET_ENCRYPTION_KEYS, read with
any of them, plain rows still read, a rotation command, and a clear error for a wrong key."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from portal.encryption import PREFIX, SecretDecryptionError
from portal.models import Secret
from tests.helpers.api import assert_status
from tests.helpers.commands import run
from tests.helpers.secrets import VALUE, VALUE_B64, make_secret, secrets_url

pytestmark = pytest.mark.django_db
OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


def raw_column(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT data FROM portal_secret WHERE name = %s", [name])
        return cursor.fetchone()[0]


def test_without_keys_the_data_is_stored_plain(settings):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = []
    make_secret(name="s1", password=VALUE)
    assert VALUE_B64 in raw_column("s1")


def test_with_a_key_the_column_holds_no_plaintext(settings, admin_api):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [OLD]
    make_secret(name="s1", password=VALUE)

    stored = raw_column("s1")
    assert stored.startswith(PREFIX)
    assert VALUE_B64 not in stored and VALUE not in stored and "password" not in stored
    assert admin_api.get(secrets_url(name="s1")).json()["data"] == {"password": VALUE_B64}


def test_a_compare_and_set_update_encrypts_too(settings, admin_api):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [OLD]
    make_secret(name="s1", password="first")
    admin_api.patch(
        secrets_url(name="s1"),
        {"stringData": {"password": VALUE}},
        format="json",
    )
    assert raw_column("s1").startswith(PREFIX) and VALUE_B64 not in raw_column("s1")
    assert Secret.objects.get(name="s1").data["password"] == VALUE_B64


def test_plain_rows_written_before_a_key_was_set_still_read(settings):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = []
    make_secret(name="old", password=VALUE)
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [NEW]
    assert Secret.objects.get(name="old").data == {"password": VALUE_B64}


def test_rotation_rewrites_every_secret_with_the_new_first_key(settings):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [OLD]
    make_secret(name="a", password=VALUE)
    make_secret(name="b", token=VALUE)
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = []
    make_secret(name="plain", token=VALUE)
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [NEW, OLD]
    assert Secret.objects.get(name="a").data == {"password": VALUE_B64}  # old rows still read
    versions = dict(Secret.objects.values_list("name", "resource_version"))

    result = run("rotate_secret_keys")

    assert (result.code, result.out) == (0, "rewrote 3 secrets with the first key\n")
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [NEW]  # the old key can go now
    assert Secret.objects.get(name="a").data == {"password": VALUE_B64}
    assert Secret.objects.get(name="plain").data == {"token": VALUE_B64}
    assert all(raw_column(name).startswith(PREFIX) for name in ("a", "b", "plain"))
    assert dict(Secret.objects.values_list("name", "resource_version")) == versions


def test_rotation_needs_a_key(settings):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = []
    result = run("rotate_secret_keys")
    assert result.code == 1 and "KRUNTIMES_SECRET_ENCRYPTION_KEYS is empty" in result.err


def test_a_wrong_key_is_a_clear_error_that_shows_no_data(settings, admin_api):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [OLD]
    make_secret(name="s1", password=VALUE)
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [NEW]

    with pytest.raises(SecretDecryptionError, match="cannot be decrypted with any key"):
        Secret.objects.get(name="s1")
    response = admin_api.get(secrets_url(name="s1"))
    body = assert_status(response, 500, "InternalError")
    assert "cannot be decrypted" in body["message"]
    assert VALUE_B64 not in response.content.decode()
    result = run("rotate_secret_keys")
    assert result.code == 1 and "secret default/s1: stored Secret data cannot" in result.err
    assert "Traceback" not in result.err


def test_encrypted_rows_without_any_key_say_so(settings):
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = [OLD]
    make_secret(name="s1", password=VALUE)
    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = []
    with pytest.raises(SecretDecryptionError, match="KRUNTIMES_SECRET_ENCRYPTION_KEYS is empty"):
        Secret.objects.get(name="s1")


def test_a_malformed_key_is_a_configuration_error_not_echoing_it(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.KRUNTIMES_SECRET_ENCRYPTION_KEYS = ["not-a-fernet-key"]
    with pytest.raises(ImproperlyConfigured, match="entry 1 is not a Fernet key") as raised:
        make_secret(name="s1", password=VALUE)
    assert "not-a-fernet-key" not in str(raised.value)
