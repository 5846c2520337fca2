"""A local Runtime Pod gets the Secrets its Runtime references from the database, laid out as a
Secret volume in its own directory, private to this user, and loses them with the pod."""

from __future__ import annotations

import stat
import uuid

import pytest

from scheduling.providers import local, pod_secrets
from tests.helpers.records import make_runtime
from tests.helpers.secrets import VALUE, make_secret

pytestmark = pytest.mark.django_db

S3 = {"driver": "s3", "s3": {"bucket": "b", "credentialsSecretName": "s3-creds"}}


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def pod(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return local.PodIdentity("default", "bash", "bash-abcde", str(uuid.uuid4()))


def test_register_writes_the_referenced_secret_only(pod):
    make_runtime(artifactStore=S3)
    make_secret(name="s3-creds", accessKeyID="AKID", secretAccessKey=VALUE)
    make_secret(name="unrelated", token="not-for-this-pod")

    local.register(pod)

    root = pod.secrets
    assert root == pod.workspace.parent / "secrets"
    assert sorted(p.name for p in root.iterdir()) == ["s3-creds"]
    assert (root / "s3-creds" / "secretAccessKey").read_bytes() == VALUE.encode()
    assert (root / "s3-creds" / "accessKeyID").read_bytes() == b"AKID"
    assert mode(root) == mode(root / "s3-creds") == 0o700
    assert mode(root / "s3-creds" / "secretAccessKey") == 0o600
    assert local.pod_env(pod, {})["KRUNTIME_SECRETS_DIR"] == str(root)


def test_the_secrets_go_with_the_pod(pod):
    make_runtime(artifactStore=S3)
    make_secret(name="s3-creds", accessKeyID="AKID", secretAccessKey=VALUE)
    local.register(pod)
    assert pod.secrets.is_dir()

    local.unregister(pod)

    assert not pod.secrets.exists()


def test_a_missing_secret_is_left_out_and_the_pod_still_starts(pod):
    make_runtime(artifactStore=S3)
    local.register(pod)
    assert list(pod.secrets.iterdir()) == []


def test_a_rewrite_drops_keys_the_secret_no_longer_has(tmp_path):
    from portal.models import Secret

    make_secret(name="s3-creds", old="1", kept="2")
    pod_secrets.write_secrets(tmp_path / "s", "default", ["s3-creds"])
    Secret.objects.filter(name="s3-creds").update(data={"kept": "Mw=="})

    pod_secrets.write_secrets(tmp_path / "s", "default", ["s3-creds"])

    assert sorted(p.name for p in (tmp_path / "s" / "s3-creds").iterdir()) == ["kept"]
    assert (tmp_path / "s" / "s3-creds" / "kept").read_bytes() == b"3"


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ({"artifactStore": S3}, ["s3-creds"]),
        ({"artifactStore": {"driver": "filesystem", "filesystem": {"volumeClaimName": "a"}}}, []),
        ({}, []),
    ],
)
def test_the_secrets_a_runtime_references(spec, names):
    assert pod_secrets.referenced_secrets(spec) == names
