"""portal.secrets: decoded values for controllers; errors name the object and key, never a value."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.machinery.registry import registry
from portal.models import ConfigMap, Secret
from portal.secrets import MissingReference, config_map_value, secret_data, secret_value
from tests.helpers.operator import OPERATOR
from tests.helpers.secrets import VALUE, b64, config_map, make_secret

pytestmark = pytest.mark.django_db


@pytest.fixture
def creds():
    return make_secret("default", "creds", password=VALUE, user="ci")


@pytest.fixture
def settings_map():
    kind = registry.get("", "v1", "configmaps")
    body = config_map(
        "app", {"mode": "fast"}, binaryData={"blob": b64(b"\xff\x00"), "txt": b64("hi")}
    )
    return store.create(kind, body, namespace="default", context=OPERATOR)


def test_secret_value_is_the_decoded_bytes(creds):
    assert secret_value("default", "creds", "password") == VALUE.encode()


def test_secret_data_is_every_key_decoded(creds):
    assert secret_data("default", "creds") == {"password": VALUE.encode(), "user": b"ci"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: secret_value("default", "nope", "k"), "secret default/nope not found"),
        (lambda: secret_value("other", "creds", "password"), "secret other/creds not found"),
        (lambda: secret_data("default", "nope"), "secret default/nope not found"),
        (lambda: secret_value("default", "creds", "k"), "key k not found in secret default/creds"),
        (lambda: config_map_value("default", "nope", "k"), "configmap default/nope not found"),
        (
            lambda: config_map_value("default", "app", "k"),
            "key k not found in configmap default/app",
        ),
    ],
)
def test_missing_references_are_named(creds, settings_map, call, message):
    with pytest.raises(MissingReference) as raised:
        call()
    assert str(raised.value) == message
    assert VALUE not in str(raised.value)


def test_config_map_values(settings_map):
    assert config_map_value("default", "app", "mode") == "fast"
    assert config_map_value("default", "app", "txt") == "hi"
    with pytest.raises(MissingReference, match="binary, not UTF-8"):
        config_map_value("default", "app", "blob")


def test_a_corrupt_row_names_the_key_not_the_value(creds):
    Secret.objects.filter(name="creds").update(data={"password": "!!" + VALUE})
    with pytest.raises(MissingReference) as raised:
        secret_value("default", "creds", "password")
    assert str(raised.value) == "key password of secret default/creds is not valid base64"


def test_terminating_objects_still_count(creds, settings_map):
    now = timezone.now()
    Secret.objects.filter(name="creds").update(deletion_timestamp=now, finalizers=["x/y"])
    ConfigMap.objects.filter(name="app").update(deletion_timestamp=now, finalizers=["x/y"])
    assert secret_value("default", "creds", "user") == b"ci"
    assert config_map_value("default", "app", "mode") == "fast"
