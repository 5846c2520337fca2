"""v1 Secret over the REST API: data/stringData/type/immutable as Kubernetes has them, values
only on a GET of one Secret, and no value in any error."""

from __future__ import annotations

import json

import pytest

from portal.models import Secret
from tests.helpers.api import assert_status, causes, merge_patch
from tests.helpers.secrets import VALUE, VALUE_B64, b64, secret, secrets_url

pytestmark = pytest.mark.django_db


def create(api, body, namespace="default"):
    return api.post(secrets_url(namespace), body, format="json")


def test_create_defaults_type_and_get_returns_the_data(admin_api):
    response = create(admin_api, secret("s1", {"password": VALUE_B64}))
    assert response.status_code == 201, response.json()

    got = admin_api.get(secrets_url(name="s1")).json()
    assert got["type"] == "Opaque"
    assert got["data"] == {"password": VALUE_B64}
    assert "stringData" not in got


def test_string_data_is_folded_into_data_base64_and_never_stored(admin_api):
    body = secret("s1", {"a": b64("old"), "b": b64("kept")}, stringData={"a": "new", "c": VALUE})
    created = create(admin_api, body).json()

    expected = {"a": b64("new"), "b": b64("kept"), "c": VALUE_B64}
    assert created["data"] == expected and "stringData" not in created
    assert admin_api.get(secrets_url(name="s1")).json()["data"] == expected
    patched = merge_patch(admin_api, secrets_url(name="s1"), {"stringData": {"b": "changed"}})
    assert patched.json()["data"]["b"] == b64("changed")
    assert "stringData" not in patched.json()
    assert Secret.objects.get(name="s1").data == {**expected, "b": b64("changed")}


def test_a_patch_removes_a_key_with_null(admin_api):
    create(admin_api, secret("s1", {"a": b64("1"), "b": b64("2")}))
    patched = merge_patch(admin_api, secrets_url(name="s1"), {"data": {"a": None}})
    assert patched.json()["data"] == {"b": b64("2")}


@pytest.mark.parametrize("namespace", ["default", None])
def test_a_list_shows_no_values(admin_api, namespace):
    create(admin_api, secret("s1", {"password": VALUE_B64}, type="kubernetes.io/basic-auth"))

    response = admin_api.get(secrets_url(namespace))

    assert response.status_code == 200
    (item,) = response.json()["items"]
    assert "data" not in item and "stringData" not in item
    assert item["type"] == "kubernetes.io/basic-auth"
    assert VALUE_B64 not in response.content.decode() and VALUE not in response.content.decode()


def test_invalid_base64_is_named_without_the_value(admin_api):
    bad = VALUE + "!"
    response = create(admin_api, secret("s1", {"password": bad}))

    body = assert_status(response, 422, "Invalid")
    assert causes(response) == {"data[password]": "FieldValueInvalid"}
    assert body["details"]["causes"][0]["message"] == "must be base64"
    assert VALUE not in response.content.decode()


@pytest.mark.parametrize(
    "key",
    ["bad/key", "sp ace", "..hidden", ".", "k" * 254, ""],
)
def test_keys_must_be_config_keys(admin_api, key):
    response = create(admin_api, secret("s1", {key: VALUE_B64}))

    assert_status(response, 422, "Invalid")
    assert f"data[{key}]" in causes(response)
    assert VALUE_B64 not in response.content.decode()


def test_string_data_keys_are_checked_too(admin_api):
    response = create(admin_api, secret("s1", stringData={"no/slash": VALUE}))
    assert_status(response, 422, "Invalid")
    assert "data[no/slash]" in causes(response)
    assert VALUE not in response.content.decode()


def test_dotted_and_dashed_keys_are_fine(admin_api):
    ok = {".dotfile": VALUE_B64, "KEY_NAME": VALUE_B64, "key-name.json": VALUE_B64}
    assert create(admin_api, secret("s1", ok)).status_code == 201


def test_total_size_is_at_most_one_mebibyte(admin_api):
    half = b64(b"x" * (512 * 1024))
    assert create(admin_api, secret("fits", {"a": half, "b": half})).status_code == 201

    response = create(admin_api, secret("big", {"a": half, "b": half, "c": b64("!")}))
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"data": "FieldValueTooLong"}


def test_a_value_must_be_a_string(admin_api):
    response = create(admin_api, secret("s1", {"a": 12345}))
    assert_status(response, 422, "Invalid")
    assert "12345" not in json.dumps(response.json()["details"])


def test_type_is_immutable(admin_api):
    create(admin_api, secret("s1", {"a": VALUE_B64}, type="example.com/thing"))

    response = merge_patch(admin_api, secrets_url(name="s1"), {"type": "Opaque"})

    assert_status(response, 422, "Invalid")
    assert causes(response) == {"type": "FieldValueInvalid"}


class TestImmutable:
    @pytest.fixture
    def frozen(self, admin_api):
        created = create(admin_api, secret("s1", {"a": VALUE_B64}, immutable=True))
        assert created.status_code == 201
        return secrets_url(name="s1")

    @pytest.mark.parametrize(
        "change",
        [
            {"data": {"a": b64("other")}},
            {"data": {"b": b64("added")}},
            {"data": {"a": None}},
            {"stringData": {"a": "other"}},
        ],
    )
    def test_data_cannot_change(self, admin_api, frozen, change):
        response = merge_patch(admin_api, frozen, change)
        body = assert_status(response, 422, "Invalid")
        assert causes(response) == {"data": "FieldValueForbidden"}
        assert VALUE_B64 not in json.dumps(body)

    @pytest.mark.parametrize("value", [False, None])
    def test_immutable_cannot_be_unset(self, admin_api, frozen, value):
        response = merge_patch(admin_api, frozen, {"immutable": value})
        assert_status(response, 422, "Invalid")
        assert causes(response) == {"immutable": "FieldValueForbidden"}

    def test_metadata_still_changes(self, admin_api, frozen):
        response = merge_patch(admin_api, frozen, {"metadata": {"labels": {"team": "a"}}})
        assert response.status_code == 200, response.json()

    def test_a_mutable_secret_may_become_immutable_and_change_on_the_way(self, admin_api):
        create(admin_api, secret("s2", {"a": VALUE_B64}))
        response = merge_patch(
            admin_api, secrets_url(name="s2"), {"immutable": True, "data": {"a": b64("x")}}
        )
        assert response.status_code == 200, response.json()


def test_writes_log_no_value(admin_api, caplog):
    caplog.set_level("DEBUG")
    create(admin_api, secret("s1", stringData={"password": VALUE}))
    merge_patch(admin_api, secrets_url(name="s1"), {"stringData": {"password": VALUE + "2"}})
    create(admin_api, secret("bad", {"password": VALUE + "!"}))
    admin_api.delete(secrets_url(name="s1"))
    assert VALUE not in caplog.text and VALUE_B64 not in caplog.text
