"""The artifact-cleanup finalizer reads an S3 store's credentials from the Run's namespace's
Secret in the database (no host directory of Secrets)."""

from __future__ import annotations

import uuid

import boto3
import pytest

from runtimed.stores import RunScope, StoreError
from scheduling import cleanup
from scheduling.models import Run
from tests.helpers.records import make_run, make_runtime
from tests.helpers.secrets import make_secret

pytestmark = pytest.mark.django_db

ACCESS_KEY, SECRET_KEY = "AKIDCLEANUPTEST", "cleanup-secret-value"


def test_namespace_secrets_reads_the_database_and_names_a_missing_one():
    make_secret("default", "s3-creds", accessKeyID=ACCESS_KEY, secretAccessKey=SECRET_KEY)
    make_secret("other", "elsewhere", accessKeyID="x", secretAccessKey="y")
    lookup = cleanup.namespace_secrets("default")

    assert lookup("s3-creds") == {
        "accessKeyID": ACCESS_KEY.encode(),
        "secretAccessKey": SECRET_KEY.encode(),
    }
    with pytest.raises(StoreError, match="secret default/elsewhere not found"):
        lookup("elsewhere")  # another namespace's Secret is not this Run's


@pytest.fixture
def s3_run(s3_endpoint, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    bucket = f"cleanup-{uuid.uuid4().hex[:12]}"
    spec = {
        "driver": "s3",
        "s3": {
            "bucket": bucket,
            "region": "us-east-1",
            "endpoint": s3_endpoint,
            "forcePathStyle": True,
            "credentialsSecretName": "s3-creds",
        },
    }
    make_runtime()
    run = make_run("r1")
    Run.objects.filter(pk=run.pk).update(status={**run.status, "artifactStore": spec})
    admin = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
    )
    admin.create_bucket(Bucket=bucket)
    admin.put_object(
        Bucket=bucket, Key=RunScope("default", str(run.uid)).relative("d.tgz"), Body=b"x"
    )
    return Run.objects.get(pk=run.pk), admin, bucket


def test_the_s3_artifacts_are_deleted_with_the_secret_from_the_database(s3_run):
    run, admin, bucket = s3_run
    make_secret("default", "s3-creds", accessKeyID=ACCESS_KEY, secretAccessKey=SECRET_KEY)

    store = cleanup.run_store(run)
    assert store.client._request_signer._credentials.access_key == ACCESS_KEY
    assert cleanup.delete_artifacts(run) == 1
    assert admin.list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def test_a_missing_credentials_secret_is_a_store_error_naming_it(s3_run):
    run, _, _ = s3_run
    with pytest.raises(StoreError, match="secret default/s3-creds not found"):
        cleanup.delete_artifacts(run)
