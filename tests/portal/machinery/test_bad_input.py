"""Bad input gets a Kubernetes Status naming the field at fault, and nothing is half-written."""

from __future__ import annotations

import pytest

from tests.helpers.api import API_VERSION, assert_status, causes, merge_patch, widget, widgets

pytestmark = pytest.mark.django_db


def _nothing_written(client) -> None:
    assert client.get(widgets()).json()["items"] == []


def test_malformed_json(admin_api):
    response = admin_api.post(widgets(), '{"metadata": {', content_type="application/json")
    body = assert_status(response, 400, "BadRequest")
    assert "JSON parse error" in body["message"]
    _nothing_written(admin_api)


def test_malformed_yaml(admin_api):
    response = admin_api.post(
        widgets(), "metadata: [unclosed\n  name: x", content_type="application/yaml"
    )
    assert "YAML parse error" in assert_status(response, 400, "BadRequest")["message"]
    _nothing_written(admin_api)


def test_several_yaml_documents_in_one_request(admin_api):
    response = admin_api.post(widgets(), "a: 1\n---\nb: 2\n", content_type="application/yaml")
    assert_status(response, 400, "BadRequest")


def test_body_that_is_not_an_object(admin_api):
    assert_status(admin_api.post(widgets(), [1, 2], format="json"), 400, "BadRequest")
    _nothing_written(admin_api)


def test_unknown_fields_are_named(admin_api):
    manifest = widget("a", bogus=1)
    manifest["extra"] = True
    manifest["metadata"]["nickname"] = "x"
    response = admin_api.post(widgets(), manifest, format="json")
    assert_status(response, 422, "Invalid")
    assert causes(response) == {
        "spec.bogus": "FieldValueForbidden",
        "extra": "FieldValueForbidden",
        "metadata.nickname": "FieldValueForbidden",
    }
    _nothing_written(admin_api)


def test_nested_unknown_and_list_item_errors_carry_their_path(admin_api):
    manifest = widget("a", parts=[{"name": "ok"}, {"name": "x" * 17, "weight": 2}])
    response = admin_api.post(widgets(), manifest, format="json")
    assert causes(response) == {
        "spec.parts[1].name": "FieldValueTooLong",
        "spec.parts[1].weight": "FieldValueForbidden",
    }


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"size": "big"}, "spec.size", "FieldValueInvalid"),
        ({"size": 11}, "spec.size", "FieldValueInvalid"),
        ({}, "spec.size", "FieldValueRequired"),
        ({"size": 1, "color": "pink"}, "spec.color", "FieldValueNotSupported"),
        ({"size": 1, "parts": {"name": "x"}}, "spec.parts", "FieldValueTypeInvalid"),
    ],
)
def test_wrong_types_and_values(admin_api, spec, field, reason):
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "a"},
        "spec": spec,
    }
    response = admin_api.post(widgets(), manifest, format="json")
    assert_status(response, 422, "Invalid")
    assert causes(response) == {field: reason}
    _nothing_written(admin_api)


def test_spec_that_is_not_an_object(admin_api):
    manifest = widget("a")
    manifest["spec"] = "size=1"
    assert causes(admin_api.post(widgets(), manifest, format="json")) == {
        "spec": "FieldValueTypeInvalid"
    }


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("a" * 253, None),
        ("a" * 254, "FieldValueTooLong"),
        ("Upper", "FieldValueInvalid"),
        ("", "FieldValueRequired"),
    ],
)
def test_name_rules(admin_api, name, reason):
    response = admin_api.post(widgets(), widget(name), format="json")
    if reason is None:
        assert response.status_code == 201
    else:
        assert_status(response, 422, "Invalid")
        assert causes(response) == {"metadata.name": reason}


def test_bad_labels_are_named(admin_api):
    response = admin_api.post(
        widgets(), widget("a", metadata={"labels": {"ok": "a b"}}), format="json"
    )
    assert_status(response, 422, "Invalid")
    assert list(causes(response)) == ["metadata.labels[ok]"]


def test_namespace_that_does_not_exist(admin_api):
    body = assert_status(
        admin_api.post(widgets("ghost"), widget("a"), format="json"), 404, "NotFound"
    )
    assert body["message"] == 'namespaces "ghost" not found'


def test_body_namespace_must_match_path(admin_api):
    manifest = widget("a", metadata={"namespace": "elsewhere"})
    response = admin_api.post(widgets(), manifest, format="json")
    assert_status(response, 400, "BadRequest")
    assert "metadata.namespace" in causes(response)


@pytest.mark.parametrize(
    ("field", "value"), [("kind", "Gadget"), ("apiVersion", "testing.kruntimes.io/v2")]
)
def test_kind_and_api_version_must_match_path(admin_api, field, value):
    manifest = widget("a")
    manifest[field] = value
    response = admin_api.post(widgets(), manifest, format="json")
    assert_status(response, 400, "BadRequest")
    assert causes(response) == {field: "FieldValueInvalid"}
    _nothing_written(admin_api)


def test_put_name_must_match_url(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    response = admin_api.put(f"{widgets()}/a", widget("b"), format="json")
    assert_status(response, 400, "BadRequest")
    assert causes(response) == {"metadata.name": "FieldValueInvalid"}


def test_invalid_update_changes_nothing(admin_api):
    created = admin_api.post(widgets(), widget("a", 1), format="json").json()
    response = merge_patch(admin_api, f"{widgets()}/a", {"spec": {"size": 50}})
    assert_status(response, 422, "Invalid")
    assert admin_api.get(f"{widgets()}/a").json() == created


def test_unknown_paths_are_status_not_html(admin_api):
    for path in (
        "/apis/nope/v1/things",
        "/apis/testing.kruntimes.io/v9",
        "/api/v1/namespaces/default/pods",
    ):
        response = admin_api.get(path)
        assert response["Content-Type"].startswith("application/json"), path
        assert_status(response, 404, "NotFound")


def test_method_not_allowed_is_status(admin_api):
    response = admin_api.delete(f"/apis/{API_VERSION}/widgets")
    assert_status(response, 405, "MethodNotAllowed")


def test_anonymous_gets_unauthorized_status(anon_api):
    for path in (widgets(), "/apis", f"{widgets()}/a"):
        assert_status(anon_api.get(path), 401, "Unauthorized")
    assert_status(anon_api.post(widgets(), widget("a"), format="json"), 401, "Unauthorized")


def test_bad_token_is_unauthorized(anon_api):
    anon_api.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert_status(anon_api.get(widgets()), 401, "Unauthorized")


def test_token_keyword_also_accepted(admin_user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin_user).key}")
    assert client.get(widgets()).status_code == 200


def test_session_auth_works_for_console_users(client, admin_user):
    client.force_login(admin_user)
    assert client.get(widgets()).status_code == 200


def test_yaml_dates_stay_strings_like_json(admin_api):
    text = "metadata:\n  name: a\n  labels:\n    day: 2024-01-01\nspec:\n  size: 1\n"
    assert admin_api.post(widgets(), text, content_type="application/yaml").status_code == 201
    assert admin_api.get(f"{widgets()}/a").json()["metadata"]["labels"] == {"day": "2024-01-01"}


@pytest.mark.parametrize("value", ["2024-01-01", "yes", 1])
def test_owner_reference_flags_must_be_booleans(admin_api, value):
    ref = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "name": "default",
        "uid": "u",
        "controller": value,
    }
    response = admin_api.post(
        widgets(), widget("a", metadata={"ownerReferences": [ref]}), format="json"
    )
    assert_status(response, 422, "Invalid")
    assert causes(response) == {"metadata.ownerReferences[0].controller": "FieldValueTypeInvalid"}


def test_default_namespace_cannot_be_deleted(admin_api):
    assert_status(admin_api.delete("/api/v1/namespaces/default"), 403, "Forbidden")
    assert admin_api.get("/api/v1/namespaces/default").status_code == 200
