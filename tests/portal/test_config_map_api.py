"""v1 ConfigMap over the REST API: data, binaryData, immutable as Kubernetes validates them."""

from __future__ import annotations

import pytest

from tests.helpers.api import assert_status, causes, merge_patch
from tests.helpers.secrets import b64, config_map, config_maps_url

pytestmark = pytest.mark.django_db


def create(api, body):
    return api.post(config_maps_url(), body, format="json")


def test_data_and_binary_data_round_trip_and_show_in_lists(admin_api):
    body = config_map("c1", {"settings.ini": "a = 1\n"}, binaryData={"logo": b64(b"\x89PNG")})
    assert create(admin_api, body).status_code == 201

    got = admin_api.get(config_maps_url(name="c1")).json()
    assert got["data"] == {"settings.ini": "a = 1\n"}
    assert got["binaryData"] == {"logo": b64(b"\x89PNG")}
    listed = admin_api.get(config_maps_url(None)).json()["items"]
    assert listed[0]["data"] == {"settings.ini": "a = 1\n"}


def test_a_key_in_both_data_and_binary_data(admin_api):
    response = create(admin_api, config_map("c1", {"k": "v"}, binaryData={"k": b64("v")}))
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"binaryData[k]": "FieldValueInvalid"}


def test_binary_data_must_be_base64_and_keys_config_keys(admin_api):
    response = create(admin_api, config_map("c1", {"bad key": "v"}, binaryData={"b": "%%%"}))
    assert_status(response, 422, "Invalid")
    assert causes(response) == {
        "data[bad key]": "FieldValueInvalid",
        "binaryData[b]": "FieldValueInvalid",
    }


def test_total_size_counts_data_and_binary_data(admin_api):
    half = "x" * (512 * 1024)
    ok = config_map("fits", {"a": half}, binaryData={"b": b64(half)})
    assert create(admin_api, ok).status_code == 201
    big = config_map("big", {"a": half, "c": "!"}, binaryData={"b": b64(half)})
    response = create(admin_api, big)
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"data": "FieldValueTooLong"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"data": {"k": "other"}}, "data"),
        ({"binaryData": {"b": b64("other")}}, "binaryData"),
        ({"immutable": False}, "immutable"),
    ],
)
def test_an_immutable_config_map_keeps_its_contents(admin_api, change, field):
    create(admin_api, config_map("c1", {"k": "v"}, binaryData={"b": b64("x")}, immutable=True))
    response = merge_patch(admin_api, config_maps_url(name="c1"), change)
    assert_status(response, 422, "Invalid")
    assert causes(response) == {field: "FieldValueForbidden"}


def test_a_mutable_config_map_changes(admin_api):
    create(admin_api, config_map("c1", {"k": "v"}))
    response = merge_patch(admin_api, config_maps_url(name="c1"), {"data": {"k": "w"}})
    assert response.json()["data"] == {"k": "w"}
