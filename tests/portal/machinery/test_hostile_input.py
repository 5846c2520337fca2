"""Hostile and absurd input: every one is a 4xx Status that names what is wrong, and nothing
is written. Each case here once crashed the server (500/503) or was silently accepted."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from scheduling.models import Run
from tests.helpers.api import assert_status, causes, merge_patch, widget, widgets
from tests.helpers.runs import run_manifest, runs_url

pytestmark = pytest.mark.django_db


def _nothing_written(client) -> None:
    assert client.get(widgets()).json()["items"] == []


@pytest.mark.parametrize("value", [5, ["a"], {"a": 1}, True])
def test_generate_name_of_another_type(admin_api, value):
    manifest = widget("")
    manifest["metadata"] = {"generateName": value}
    response = admin_api.post(widgets(), manifest, format="json")
    assert_status(response, 422, "Invalid")
    assert causes(response) == {
        "metadata.generateName": "FieldValueTypeInvalid",
        "metadata.name": "FieldValueRequired",
    }
    _nothing_written(admin_api)


def test_generate_name_of_another_type_beside_a_name(admin_api):
    response = admin_api.post(widgets(), widget("a", metadata={"generateName": 5}), format="json")
    assert causes(response) == {"metadata.generateName": "FieldValueTypeInvalid"}
    _nothing_written(admin_api)


@pytest.mark.parametrize(
    "field",
    [
        "name",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "resourceVersion",
    ],
)
def test_metadata_fields_of_another_type(admin_api, field):
    manifest = widget("a")
    manifest["metadata"][field] = 12345 if field != "name" else ["a"]
    response = admin_api.post(widgets(), manifest, format="json")
    assert response.status_code in (400, 422), response.json()
    assert response.json()["kind"] == "Status"
    _nothing_written(admin_api)


@override_settings(KRUNTIMES_MAX_REQUEST_BYTES=1024 * 1024)
@pytest.mark.parametrize("size", [1024 * 1024 + 1, 10 * 1024 * 1024])
def test_a_body_over_the_limit_is_413_naming_the_limit(admin_api, size):
    manifest = widget("a")
    manifest["metadata"]["annotations"] = {"pad": "x" * size}
    response = admin_api.post(widgets(), json.dumps(manifest), content_type="application/json")
    body = assert_status(response, 413, "RequestEntityTooLarge")
    assert "1048576 bytes" in body["message"]
    _nothing_written(admin_api)


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/yaml", "application/merge-patch+json"]
)
def test_nesting_1000_deep_is_400(admin_api, content_type):
    deep = "[" * 1000 + "]" * 1000
    text = (
        '{"apiVersion": "testing.kruntimes.io/v1", "kind": "Widget", "metadata": {"name": '
        f'"a"}}, "spec": {{"size": 1, "deep": {deep}}}}}'
    )
    if content_type == "application/merge-patch+json":
        admin_api.post(widgets(), widget("a"), format="json")
        response = admin_api.patch(f"{widgets()}/a", text, content_type=content_type)
    else:
        response = admin_api.post(widgets(), text, content_type=content_type)
    body = assert_status(response, 400, "BadRequest")
    assert "nest" in body["message"]


def test_nesting_at_the_limit_is_parsed(admin_api):
    from portal.machinery.decoding import MAX_DEPTH

    value = "[" * (MAX_DEPTH - 3) + "]" * (MAX_DEPTH - 3)  # the object, spec, deep: 3 levels
    text = (
        f'{{"kind": "Widget", "metadata": {{"name": "a"}}, "spec": {{"size": 1, "deep": {value}}}}}'
    )
    response = admin_api.post(widgets(), text, content_type="application/json")
    assert response.status_code == 422  # parsed: spec.deep is an unknown field
    assert causes(response) == {"spec.deep": "FieldValueForbidden"}


@pytest.mark.parametrize(
    ("content_type", "text"),
    [
        ("application/json", '{"kind": "Widget", "metadata": {"name": "a", "name": "b"}}'),
        (
            "application/json",
            '{"kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": 1, "size": 2}}',
        ),
        ("application/yaml", "kind: Widget\nmetadata:\n  name: a\n  name: b\n"),
        ("application/yaml", "kind: Widget\nkind: Gadget\nmetadata: {name: a}\n"),
    ],
    ids=["json-metadata", "json-spec", "yaml-metadata", "yaml-top"],
)
def test_duplicate_keys_are_400(admin_api, content_type, text):
    body = assert_status(
        admin_api.post(widgets(), text, content_type=content_type), 400, "BadRequest"
    )
    assert "duplicate" in body["message"]
    _nothing_written(admin_api)


def test_duplicate_keys_in_a_merge_patch_are_400(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = admin_api.patch(
        f"{widgets()}/a",
        '{"spec": {"size": 2, "size": 3}}',
        content_type="application/merge-patch+json",
    )
    assert_status(response, 400, "BadRequest")
    assert admin_api.get(f"{widgets()}/a").json()["spec"]["size"] == 1


def test_a_merge_patch_removing_metadata_is_422_and_changes_nothing(admin_api):
    admin_api.post(widgets(), widget("a", metadata={"labels": {"app": "x"}}), format="json")
    before = admin_api.get(f"{widgets()}/a").json()
    response = merge_patch(admin_api, f"{widgets()}/a", {"metadata": None})
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"metadata": "FieldValueRequired"}
    assert admin_api.get(f"{widgets()}/a").json() == before


@pytest.mark.parametrize("body", [{"metadata": 5}, {"metadata": "x"}, {"metadata": []}])
def test_a_merge_patch_making_metadata_not_an_object_is_refused(admin_api, body):
    admin_api.post(widgets(), widget("a"), format="json")
    before = admin_api.get(f"{widgets()}/a").json()
    response = merge_patch(admin_api, f"{widgets()}/a", body)
    assert response.status_code in (400, 422) and response.json()["kind"] == "Status"
    assert admin_api.get(f"{widgets()}/a").json() == before


@pytest.mark.parametrize("name", ["a%00b", "a%01b", "%7F", "a%0Ab"])
@pytest.mark.parametrize("method", ["get", "delete", "patch", "put"])
def test_control_characters_in_a_url_name_are_404(admin_api, name, method):
    url = f"{widgets()}/{name}"
    if method in ("patch", "put"):
        response = getattr(admin_api, method)(
            url,
            json.dumps(widget("a")),
            content_type="application/merge-patch+json"
            if method == "patch"
            else "application/json",
        )
    else:
        response = getattr(admin_api, method)(url)
    assert_status(response, 404, "NotFound")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"ttlSecondsAfterFinished": 1e20}, "spec.ttlSecondsAfterFinished"),
        ({"ttlSecondsAfterFinished": 2**31}, "spec.ttlSecondsAfterFinished"),
        ({"ttlSecondsAfterFinished": 2**63}, "spec.ttlSecondsAfterFinished"),
        ({"retryPolicy": {"maxAttempts": 1e30}}, "spec.retryPolicy.maxAttempts"),
        ({"resources": {"requests": {"runs": 1e30}}}, "spec.resources.requests.runs"),
        ({"resources": {"requests": {"runs": 2**63}}}, "spec.resources.requests.runs"),
        (
            {"resources": {"requests": {"runs": "9223372036854775808"}}},
            "spec.resources.requests.runs",
        ),
        (
            {"resources": {"requests": {"example.com/gpu": "9Ei"}}},
            "spec.resources.requests.example.com/gpu",
        ),
    ],
    ids=[
        "ttl-1e20",
        "ttl-int32-overflow",
        "ttl-2^63",
        "attempts-1e30",
        "runs-1e30",
        "runs-2^63",
        "runs-2^63-string",
        "gpu-9Ei",
    ],
)
def test_numbers_past_their_range_are_422(admin_api, spec, field):
    manifest = run_manifest(**spec)
    response = admin_api.post(runs_url(), json.dumps(manifest), content_type="application/json")
    assert response.status_code == 422, response.json()
    assert field in causes(response)
    assert not Run.objects.exists()


@pytest.mark.parametrize("value", [2**31 - 1, "9223372036854775807"])
def test_numbers_at_their_range_pass(admin_api, value):
    spec = (
        {"ttlSecondsAfterFinished": value}
        if isinstance(value, int)
        else {"resources": {"requests": {"example.com/gpu": value}}}
    )
    response = admin_api.post(runs_url(), run_manifest(**spec), format="json")
    assert response.status_code == 201, response.json()
