"""Server-side printing: a meta.k8s.io Table when the Accept header asks for one, with the
kind's printer columns, as kubectl v1.37 asks for it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.helpers.api import assert_status, gadgets, merge_patch, widget, widgets
from tests.testapp.models import Widget

pytestmark = pytest.mark.django_db

KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def table(client, url, accept=KUBECTL_ACCEPT, **params):
    response = client.get(url, params, HTTP_ACCEPT=accept)
    assert response.status_code == 200, response.json()
    return response


def test_list_as_table_has_name_columns_age_then_wide(admin_api):
    admin_api.post(widgets(), widget("a", 3), format="json")
    response = table(admin_api, widgets())
    body = response.json()
    assert response["Content-Type"].startswith("application/json;as=Table;v=v1;g=meta.k8s.io")
    assert (body["kind"], body["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    columns = [
        (c["name"], c["type"], c["format"], c["priority"]) for c in body["columnDefinitions"]
    ]
    assert columns == [
        ("Name", "string", "name", 0),
        ("Size", "string", "", 0),
        ("Phase", "string", "", 0),
        ("Age", "string", "", 0),
        ("Color", "string", "", 1),
    ]
    assert all(c["description"] for c in body["columnDefinitions"])
    [row] = body["rows"]
    assert row["cells"][:3] == ["a", "3", "<none>"]  # as manage.py get prints them
    assert row["cells"][4] == "red"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["apiVersion"] == "meta.k8s.io/v1"
    assert row["object"]["metadata"]["name"] == "a"
    assert "creationTimestamp" in row["object"]["metadata"]
    assert "spec" not in row["object"]


def test_age_cell_is_the_translated_age(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    Widget.objects.update(creation_timestamp=timezone.now() - timedelta(minutes=3, seconds=5))
    [row] = table(admin_api, widgets()).json()["rows"]
    assert row["cells"][3] == "3m5s"


def test_one_object_as_table(admin_api):
    admin_api.post(widgets(), widget("a", 2), format="json")
    patched = merge_patch(admin_api, f"{widgets()}/a", {"metadata": {"labels": {"x": "1"}}})
    body = table(admin_api, f"{widgets()}/a").json()
    assert [row["cells"][0] for row in body["rows"]] == ["a"]
    assert body["metadata"]["resourceVersion"] == patched.json()["metadata"]["resourceVersion"]


def test_v1beta1_is_answered_when_asked_first(admin_api):
    body = table(admin_api, widgets(), accept="application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert body.json()["apiVersion"] == "meta.k8s.io/v1beta1"


@pytest.mark.parametrize(
    "accept",
    [
        "application/json",
        "application/json;as=Frobnicator;v=v1;g=meta.k8s.io",
        "application/json;as=Table;v=v2;g=meta.k8s.io,application/json",
        "application/json;as=Table;v=v1;g=example.com",
    ],
)
def test_anything_else_is_the_plain_list(admin_api, accept):
    admin_api.post(widgets(), widget("a"), format="json")
    body = table(admin_api, widgets(), accept=accept).json()
    assert body["kind"] == "WidgetList" and body["items"][0]["metadata"]["name"] == "a"


def test_include_object_none_and_object(admin_api):
    admin_api.post(widgets(), widget("a", 4), format="json")
    [row] = table(admin_api, widgets(), includeObject="None").json()["rows"]
    assert "object" not in row
    [row] = table(admin_api, widgets(), includeObject="Object").json()["rows"]
    assert row["object"]["kind"] == "Widget" and row["object"]["spec"]["size"] == 4


def test_unknown_include_object_is_a_bad_request(admin_api):
    response = admin_api.get(widgets(), {"includeObject": "All"}, HTTP_ACCEPT=KUBECTL_ACCEPT)
    body = assert_status(response, 400, "BadRequest")
    assert body["details"]["causes"][0]["field"] == "includeObject"


def test_selector_limit_and_continue_apply_to_tables(admin_api):
    for name, tier in (("a", "web"), ("b", "db"), ("c", "web"), ("d", "web")):
        admin_api.post(widgets(), widget(name, metadata={"labels": {"tier": tier}}), format="json")
    first = table(admin_api, widgets(), labelSelector="tier=web", limit=2).json()
    assert [r["cells"][0] for r in first["rows"]] == ["a", "c"]
    token = first["metadata"]["continue"]
    rest = table(admin_api, widgets(), labelSelector="tier=web", limit=2, **{"continue": token})
    assert [r["cells"][0] for r in rest.json()["rows"]] == ["d"]
    assert "continue" not in rest.json()["metadata"]


def test_a_kind_without_columns_prints_name_and_age(admin_api):
    admin_api.post(gadgets(), {**widget("g"), "kind": "Gadget"}, format="json")
    body = table(admin_api, gadgets()).json()
    assert [c["name"] for c in body["columnDefinitions"]] == ["Name", "Age"]
    assert body["rows"][0]["cells"][0] == "g"


def test_a_table_is_still_authorized(user_api):
    response = user_api.get(widgets(), HTTP_ACCEPT=KUBECTL_ACCEPT)
    assert_status(response, 403, "Forbidden")


def test_yaml_table(admin_api):
    response = table(admin_api, widgets(), accept="application/yaml;as=Table;v=v1;g=meta.k8s.io")
    assert response["Content-Type"].startswith("application/yaml;as=Table")
    assert b"kind: Table" in response.content
