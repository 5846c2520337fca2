"""The Secret admin shows keys and sizes, never values (list, change page, YAML, edit form);
an edit sets a key through stringData or removes one with data: {key: null}. The ConfigMap
admin shows its data."""

from __future__ import annotations

import pytest
import yaml
from django.urls import reverse

from portal.machinery import store
from portal.machinery.registry import registry
from portal.models import ConfigMap, Secret
from tests.helpers.operator import OPERATOR
from tests.helpers.secrets import VALUE, VALUE_B64, b64, config_map, make_secret

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def creds():
    return make_secret("default", "creds", password=VALUE, user="ci")


def page(client, name, *args) -> str:
    response = client.get(reverse(f"admin:portal_secret_{name}", args=args))
    assert response.status_code == 200
    return response.content.decode()


def assert_no_value(html: str) -> None:
    assert VALUE not in html and VALUE_B64 not in html


def test_the_list_shows_type_and_keys_not_values(client, creds):
    html = page(client, "changelist")
    assert "creds" in html and "Opaque" in html and "password" in html
    assert_no_value(html)


def test_the_change_page_shows_keys_and_sizes_not_values(client, creds):
    html = page(client, "change", creds.pk)
    assert "password" in html and f"{len(VALUE)} bytes" in html
    assert_no_value(html)


def edit(client, secret, manifest: dict):
    return client.post(
        reverse("admin:portal_secret_change", args=[secret.pk]),
        {
            "manifest": yaml.safe_dump(manifest),
            "loaded_resource_version": secret.resource_version,
            "_save": "Save",
        },
    )


def shown_manifest(secret) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret.name, "namespace": secret.namespace},
        "type": "Opaque",
    }


def test_an_edit_sets_a_key_through_string_data_and_keeps_the_rest(client, creds):
    response = edit(client, creds, {**shown_manifest(creds), "stringData": {"token": "t0k"}})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Secret.objects.get(pk=creds.pk).data == {
        "password": VALUE_B64,
        "user": b64("ci"),
        "token": b64("t0k"),
    }


def test_an_edit_removes_a_key(client, creds):
    response = edit(client, creds, {**shown_manifest(creds), "data": {"user": None}})
    assert response.status_code == 302
    assert Secret.objects.get(pk=creds.pk).data == {"password": VALUE_B64}


def test_an_unchanged_edit_writes_nothing(client, creds):
    assert edit(client, creds, shown_manifest(creds)).status_code == 302
    assert Secret.objects.get(pk=creds.pk).resource_version == creds.resource_version


def test_an_invalid_edit_shows_the_cause_without_a_value(client, creds):
    response = edit(client, creds, {**shown_manifest(creds), "type": "Other"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "field is immutable" in html
    assert_no_value(html)


def test_the_config_map_admin_shows_its_data(client):
    kind = registry.get("", "v1", "configmaps")
    store.create(kind, config_map("app", {"mode": "fast-mode"}), context=OPERATOR)
    cm = ConfigMap.objects.get(name="app")
    html = client.get(reverse("admin:portal_configmap_change", args=[cm.pk])).content.decode()
    assert "fast-mode" in html


def test_the_admin_history_records_no_value(client, creds):
    from django.contrib.admin.models import LogEntry

    edit(client, creds, {**shown_manifest(creds), "stringData": {"token": VALUE}})
    entries = " ".join(f"{e.object_repr} {e.change_message}" for e in LogEntry.objects.all())
    assert entries and VALUE not in entries and b64(VALUE) not in entries
