"""``GET .../runs/<name>/artifacts/<artifact>``: the bytes from the Run's store, RBAC on
``runs/artifacts`` (reading the Run is not enough), and a Status for every failure."""

from __future__ import annotations

import hashlib
import io

import pytest

from runtimed.stores import RunScope, build_store
from scheduling.models import Run
from tests.helpers.api import assert_status
from tests.helpers.records import make_run

from .test_run_log_api import GROUP, grant

pytestmark = pytest.mark.django_db

STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
BYTES = b"tgz!" * 1000
DIGEST = "sha256:" + hashlib.sha256(BYTES).hexdigest()


def url(name: str = "build", artifact: str = "dist.tgz", namespace: str = "default") -> str:
    return f"/apis/{GROUP}/v1alpha1/namespaces/{namespace}/runs/{name}/artifacts/{artifact}"


@pytest.fixture
def stored(settings, tmp_path) -> Run:
    settings.KRUNTIMES_ARTIFACT_VOLUMES = tmp_path
    run = make_run("build")
    store = build_store(STORE, volumes_root=tmp_path, secrets_dir=None)
    scope = RunScope("default", str(run.uid))
    location = store.put(scope, "dist.tgz", io.BytesIO(BYTES), len(BYTES), "")
    ref = {
        "name": "dist.tgz",
        "driver": "filesystem",
        "type": "file",
        "location": location,
        "sizeBytes": len(BYTES),
        "digest": DIGEST,
        "contentType": "application/gzip",
    }
    status = {**run.status, "phase": "Succeeded", "artifactStore": STORE, "artifactRefs": [ref]}
    Run.objects.filter(pk=run.pk).update(status=status, phase="Succeeded")
    return Run.objects.get(pk=run.pk)


def test_the_bytes_stream_from_the_runs_store_with_their_digest(admin_api, stored):
    response = admin_api.get(url())
    assert response.status_code == 200
    assert response.streaming
    body = b"".join(response.streaming_content)
    assert "sha256:" + hashlib.sha256(body).hexdigest() == DIGEST
    assert response["Content-Type"] == "application/gzip"
    assert response["Digest"] == DIGEST
    assert response["Content-Length"] == str(len(BYTES))
    assert 'attachment; filename="dist.tgz"' in response["Content-Disposition"]


def test_curl_accepting_anything_gets_the_bytes(admin_api, stored):
    response = admin_api.get(url(), HTTP_ACCEPT="*/*")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == BYTES


def test_an_artifact_the_run_did_not_produce_is_a_404_status(admin_api, stored):
    body = assert_status(admin_api.get(url(artifact="other.tgz")), 404, "NotFound")
    assert 'no artifact "other.tgz"' in body["message"]


def test_a_missing_run_is_a_404_status(admin_api, stored):
    assert_status(admin_api.get(url(name="nope")), 404, "NotFound")


def test_a_store_that_lost_the_bytes_is_a_503_status(admin_api, stored, tmp_path):
    for path in tmp_path.rglob("dist.tgz"):
        path.unlink()
    body = assert_status(admin_api.get(url(), HTTP_ACCEPT="*/*"), 503, "ServiceUnavailable")
    assert "dist.tgz" in body["message"]


def test_a_run_without_a_store_is_a_503_status(admin_api, settings, tmp_path):
    settings.KRUNTIMES_ARTIFACT_VOLUMES = tmp_path
    run = make_run("build")
    refs = [{"name": "dist.tgz", "driver": "filesystem", "type": "file", "location": {}}]
    Run.objects.filter(pk=run.pk).update(status={**run.status, "artifactRefs": refs})
    body = assert_status(admin_api.get(url()), 503, "ServiceUnavailable")
    assert "status.artifactStore" in body["message"]


def test_anonymous_is_unauthorized(anon_api, stored):
    assert_status(anon_api.get(url()), 401, "Unauthorized")


def test_without_rbac_it_is_forbidden_as_runs_artifacts(user_api, stored):
    body = assert_status(user_api.get(url(), HTTP_ACCEPT="*/*"), 403, "Forbidden")
    assert 'cannot get resource "runs/artifacts" in API group "kruntimes.io"' in body["message"]


def test_reading_runs_and_their_log_does_not_grant_artifacts(user_api, admin_api, stored):
    grant(admin_api, [{"apiGroups": [GROUP], "resources": ["runs", "runs/log"], "verbs": ["get"]}])
    assert user_api.get(f"/apis/{GROUP}/v1alpha1/namespaces/default/runs/build").status_code == 200
    assert_status(user_api.get(url()), 403, "Forbidden")


def test_a_role_granting_runs_artifacts_get_allows_it(user_api, admin_api, stored):
    grant(admin_api, [{"apiGroups": [GROUP], "resources": ["runs/artifacts"], "verbs": ["get"]}])
    response = user_api.get(url())
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == BYTES


def test_a_grant_in_one_namespace_does_not_reach_another(user_api, admin_api, stored):
    grant(admin_api, [{"apiGroups": [GROUP], "resources": ["runs/artifacts"], "verbs": ["get"]}])
    assert_status(user_api.get(url(namespace="team-b")), 403, "Forbidden")
