"""Downloading a Run's artifact from the admin: the bytes from the store the Run used, a 404
for a name it did not produce, a clear 502 when the store cannot give them, 403 without view."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from runtimed.stores import RunScope, build_store
from scheduling.models import Run

from .test_admin import make_run, make_runtime

pytestmark = pytest.mark.django_db

STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}


@pytest.fixture
def stored(settings, tmp_path):
    """A Run whose runtimed put ``dist.tgz`` into a filesystem store."""
    settings.KRUNTIMES_ARTIFACT_VOLUMES = tmp_path
    make_runtime()
    run = make_run("r1")
    store = build_store(STORE, volumes_root=tmp_path, secrets_dir=None)
    location = store.put(RunScope("default", str(run.uid)), "dist.tgz", io.BytesIO(b"tgz!"), 4, "")
    ref = {
        "name": "dist.tgz",
        "driver": "filesystem",
        "type": "file",
        "location": location,
        "sizeBytes": 4,
        "contentType": "application/gzip",
    }
    status = {**run.status, "phase": "Succeeded", "artifactStore": STORE, "artifactRefs": [ref]}
    Run.objects.filter(pk=run.pk).update(status=status)
    return Run.objects.get(pk=run.pk)


def url(run, name="dist.tgz"):
    return reverse("admin:scheduling_run_artifact", args=[run.pk, name])


def test_the_bytes_come_from_the_runs_store(client, admin_user, stored):
    client.force_login(admin_user)
    response = client.get(url(stored))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"tgz!"
    assert response["Content-Type"] == "application/gzip"
    assert 'attachment; filename="dist.tgz"' in response["Content-Disposition"]
    page = client.get(reverse("admin:scheduling_run_change", args=[stored.pk])).content.decode()
    assert f'href="{url(stored)}"' in page


def test_an_artifact_the_run_did_not_produce_is_404(client, admin_user, stored):
    client.force_login(admin_user)
    assert client.get(url(stored, "other.tgz")).status_code == 404


def test_a_store_that_lost_the_bytes_is_a_clear_502(client, admin_user, stored, tmp_path):
    client.force_login(admin_user)
    for path in tmp_path.rglob("dist.tgz"):
        path.unlink()
    response = client.get(url(stored))
    assert response.status_code == 502
    assert b"does not exist" in response.content


def test_without_view_permission_it_is_403(client, django_user_model, stored):
    staff = django_user_model.objects.create_user("ops", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_runtime"))
    client.force_login(staff)
    assert client.get(url(stored)).status_code in (302, 403)
