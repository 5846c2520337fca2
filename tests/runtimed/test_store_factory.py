"""build_store: a Runtime's spec.artifactStore to a store, credentials read from a Secret volume."""

from __future__ import annotations

import io
import uuid

import boto3
import pytest

from runtimed.stores import FilesystemStore, RunScope, S3Store, StoreError, build_store
from runtimed.stores.factory import read_s3_credentials

SCOPE = RunScope("ci", "uid-1")
ACCESS_KEY = "AKIDFACTORYTEST"
SECRET_KEY = "factory-secret-value-xyz"


@pytest.fixture
def bucket(s3_endpoint):
    name = f"factory-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
    ).create_bucket(Bucket=name)
    return name


def write_secret(secrets_dir, name: str, data: dict[str, str]) -> None:
    """Lay a Secret out as kubelet does: ``key -> ..data/key``, ``..data -> ..<timestamp>``."""
    directory = secrets_dir / name
    version = directory / "..2026_01_02_03_04_05.000000001"
    version.mkdir(parents=True)
    for key, value in data.items():
        (version / key).write_text(value)
        (directory / key).symlink_to(f"..data/{key}")
    (directory / "..data").symlink_to(version.name)


def s3_spec(endpoint: str, bucket: str, **extra) -> dict:
    return {
        "driver": "s3",
        "s3": {
            "bucket": bucket,
            "region": "us-east-1",
            "endpoint": endpoint,
            "forcePathStyle": True,
            **extra,
        },
    }


def test_filesystem_store_roots_at_the_claim_directory(tmp_path):
    volumes = tmp_path / "volumes"

    store = build_store(
        {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}},
        volumes_root=volumes,
        secrets_dir=None,
    )

    assert isinstance(store, FilesystemStore)
    assert store.root == volumes / "artifacts"
    assert store.root.is_dir()
    location = store.put(SCOPE, "out", io.BytesIO(b"data"), 4, "text/plain")
    assert location["filesystem"]["volumeClaimName"] == "artifacts"
    assert (volumes / "artifacts/namespaces/ci/runs/uid-1/out").read_bytes() == b"data"


def test_filesystem_store_needs_mounted_volumes():
    with pytest.raises(StoreError, match="no artifact volumes are mounted on this pod"):
        build_store(
            {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}},
            volumes_root=None,
            secrets_dir=None,
        )


@pytest.mark.parametrize("claim", ["../escape", "a/b", "..", "", None])
def test_filesystem_claim_must_be_one_directory_name(tmp_path, claim):
    with pytest.raises(StoreError):
        build_store(
            {"driver": "filesystem", "filesystem": {"volumeClaimName": claim}},
            volumes_root=tmp_path,
            secrets_dir=None,
        )


@pytest.mark.parametrize("spec", [{"driver": "gcs"}, {}, {"driver": None}])
def test_unknown_driver_is_a_store_error(tmp_path, spec):
    with pytest.raises(StoreError, match="unknown artifact store driver"):
        build_store(spec, volumes_root=tmp_path, secrets_dir=tmp_path)


def test_s3_store_uses_credentials_from_the_secret_volume(s3_endpoint, bucket, tmp_path):
    write_secret(
        tmp_path,
        "s3-creds",
        {"accessKeyID": ACCESS_KEY + "\n", "secretAccessKey": SECRET_KEY + "\n"},
    )
    spec = s3_spec(
        s3_endpoint,
        bucket,
        prefix="/ci/x/",
        credentialsSecretName="s3-creds",
        uploadPartSize=5 * 1024 * 1024,
        uploadConcurrency=2,
    )

    store = build_store(spec, volumes_root=None, secrets_dir=tmp_path)

    assert isinstance(store, S3Store)
    credentials = store.client._request_signer._credentials.get_frozen_credentials()
    assert (credentials.access_key, credentials.secret_key) == (ACCESS_KEY, SECRET_KEY)
    assert store.transfer_config.multipart_chunksize == 5 * 1024 * 1024
    assert store.transfer_config.max_concurrency == 2
    location = store.put(SCOPE, "out", io.BytesIO(b"data"), 4, "text/plain")
    assert location == {"s3": {"bucket": bucket, "key": "ci/x/namespaces/ci/runs/uid-1/out"}}
    ref = {"driver": "s3", "location": location}
    assert store.open(ref).read() == b"data"


def test_s3_credentials_accept_the_aws_key_names_and_a_session_token(tmp_path):
    write_secret(
        tmp_path,
        "aws",
        {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY + "\r\n",
            "AWS_SESSION_TOKEN": "token\n",
        },
    )

    assert read_s3_credentials(tmp_path, "aws") == {
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET_KEY,
        "aws_session_token": "token",
    }


def test_s3_credentials_prefer_our_key_names(tmp_path):
    write_secret(
        tmp_path,
        "both",
        {
            "accessKeyID": "ours",
            "AWS_ACCESS_KEY_ID": "aws",
            "secretAccessKey": "ours-secret",
            "sessionToken": "t",
        },
    )

    assert read_s3_credentials(tmp_path, "both") == {
        "aws_access_key_id": "ours",
        "aws_secret_access_key": "ours-secret",
        "aws_session_token": "t",
    }


def test_a_missing_secret_key_names_the_keys_not_the_values(tmp_path):
    write_secret(tmp_path, "half", {"accessKeyID": ACCESS_KEY})
    spec = {"driver": "s3", "s3": {"bucket": "b", "credentialsSecretName": "half"}}

    with pytest.raises(StoreError) as raised:
        build_store(spec, volumes_root=None, secrets_dir=tmp_path)

    message = str(raised.value)
    assert '"half"' in message
    assert "secretAccessKey or AWS_SECRET_ACCESS_KEY" in message
    assert "accessKeyID" not in message
    assert ACCESS_KEY not in message


def test_an_empty_secret_key_counts_as_missing(tmp_path):
    write_secret(tmp_path, "empty", {"accessKeyID": "\n", "secretAccessKey": SECRET_KEY})

    with pytest.raises(StoreError, match="accessKeyID or AWS_ACCESS_KEY_ID") as raised:
        read_s3_credentials(tmp_path, "empty")
    assert SECRET_KEY not in str(raised.value)


def test_an_unmounted_secret_is_named(tmp_path):
    spec = {"driver": "s3", "s3": {"bucket": "b", "credentialsSecretName": "s3-creds"}}

    with pytest.raises(StoreError, match='Secret "s3-creds" is not mounted'):
        build_store(spec, volumes_root=None, secrets_dir=tmp_path)
    with pytest.raises(StoreError, match='Secret "s3-creds" is not mounted'):
        build_store(spec, volumes_root=None, secrets_dir=None)


def test_a_secret_name_must_be_one_directory_name(tmp_path):
    write_secret(tmp_path, "real", {"accessKeyID": ACCESS_KEY, "secretAccessKey": SECRET_KEY})
    spec = {"driver": "s3", "s3": {"bucket": "b", "credentialsSecretName": "../secrets/real"}}

    with pytest.raises(StoreError):
        build_store(spec, volumes_root=None, secrets_dir=tmp_path / "secrets")


def test_without_a_secret_s3_uses_the_default_credential_chain(
    s3_endpoint, bucket, tmp_path, monkeypatch
):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    store = build_store(s3_spec(s3_endpoint, bucket), volumes_root=None, secrets_dir=tmp_path)

    credentials = store.client._request_signer._credentials.get_frozen_credentials()
    assert credentials.access_key == "AKIDFROMENV"
    store.put(SCOPE, "out", io.BytesIO(b"data"), 4, "text/plain")


def test_s3_options_default_when_absent():
    store = build_store(
        {"driver": "s3", "s3": {"bucket": "only-a-bucket"}}, volumes_root=None, secrets_dir=None
    )

    assert store.bucket == "only-a-bucket"
    assert store.prefix == ""
    assert store.transfer_config.multipart_threshold == 8 * 1024 * 1024
    assert store.transfer_config.max_concurrency == 4
    assert store.client.meta.config.s3["addressing_style"] == "auto"


def test_s3_needs_a_bucket():
    with pytest.raises(StoreError, match="no bucket"):
        build_store({"driver": "s3", "s3": {}}, volumes_root=None, secrets_dir=None)
