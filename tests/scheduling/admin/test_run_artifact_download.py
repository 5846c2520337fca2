"""Downloading a Run's artifact from its admin page: the link is the API's
``runs/<name>/artifacts/<artifact>``, which a logged-in browser reads with its session: the
bytes from the store the Run used, a 404 Status for a name it did not produce, a 503 Status
when the store cannot give them, a 403 Status without the ``runs/artifacts`` grant."""

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
    return f"/apis/kruntimes.io/v1alpha1/namespaces/default/runs/{run.name}/artifacts/{name}"


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
    response = client.get(url(stored, "other.tgz"))
    assert (response.status_code, response.json()["reason"]) == (404, "NotFound")


def test_a_store_that_lost_the_bytes_is_a_clear_503(client, admin_user, stored, tmp_path):
    client.force_login(admin_user)
    for path in tmp_path.rglob("dist.tgz"):
        path.unlink()
    response = client.get(url(stored))
    assert response.status_code == 503
    assert "does not exist" in response.json()["message"]


def test_without_the_runs_artifacts_grant_it_is_a_403_status(client, django_user_model, stored):
    staff = django_user_model.objects.create_user("ops", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_run"))
    client.force_login(staff)
    response = client.get(url(stored))
    assert (response.status_code, response.json()["reason"]) == (403, "Forbidden")
