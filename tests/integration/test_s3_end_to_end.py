"""The S3 artifact store for real under ``manage.py up``: runtimed uploads to moto's S3 server
over HTTP with credentials from a Secret object (each local pod gets it as a Secret volume in
its own directory; the control plane reads it from the database), a second Run reads the artifact back, and
deleting the Run makes the control plane remove its objects from the bucket."""

from __future__ import annotations

import boto3
import pytest

from tests.helpers.live import API, RUNTIME, phase, ready_pods, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
KEYS = {"aws_access_key_id": "e2e-key", "aws_secret_access_key": "e2e-secret"}


@pytest.mark.parametrize("broker", ["filesystem"], indirect=True)  # one broker is enough
def test_artifacts_through_s3_and_their_cleanup(portal_up, s3_endpoint):
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", **KEYS)
    s3.create_bucket(Bucket="e2e-artifacts")
    store = {
        "driver": "s3",
        "s3": {
            "bucket": "e2e-artifacts",
            "prefix": "ci",
            "endpoint": s3_endpoint,
            "region": "us-east-1",
            "forcePathStyle": True,
            "credentialsSecretName": "s3-creds",
            "uploadPartSize": 5242880,
        },
    }
    session, base = portal_up
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s3-creds"},
        "stringData": {
            "accessKeyID": KEYS["aws_access_key_id"],
            "secretAccessKey": KEYS["aws_secret_access_key"],
        },
    }
    response = session.post(f"{base}/api/v1/namespaces/default/secrets", json=secret, timeout=10)
    assert response.status_code == 201, response.text
    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "artifactStore": store}}
    assert session.post(f"{base}{API}/runtimes", json=runtime, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=60), "Runtime Pods never got ready"

    build = script_run(
        "build",
        """
mkdir -p "$KRUNTIME_ARTIFACTS_DIR/site"
head -c 6000000 /dev/urandom > "$KRUNTIME_ARTIFACTS_DIR/big.bin"
echo "<h1>$KRUNTIME_RUN_UID</h1>" > "$KRUNTIME_ARTIFACTS_DIR/site/index.html"
""",
    )
    session.post(f"{base}{API}/runs", json=build, timeout=10)
    assert wait_until(lambda: phase(session, base, "build") in ("Succeeded", "Failed"), timeout=60)
    built = session.get(f"{base}{API}/runs/build", timeout=5).json()
    assert built["status"]["phase"] == "Succeeded", built["status"]
    refs = {ref["name"]: ref for ref in built["status"]["artifactRefs"]}
    uid = built["metadata"]["uid"]
    assert refs["site"]["location"] == {
        "s3": {"bucket": "e2e-artifacts", "key": f"ci/namespaces/default/runs/{uid}/site"}
    }
    head = s3.head_object(Bucket="e2e-artifacts", Key=refs["big.bin"]["location"]["s3"]["key"])
    assert head["ContentLength"] == 6000000 == refs["big.bin"]["sizeBytes"]
    assert head["ETag"].strip('"').endswith("-2")  # above uploadPartSize: multipart

    verify = script_run(
        "verify",
        f'grep -q "<h1>{uid}</h1>" site/index.html && test "$(wc -c < big.bin)" -eq 6000000',
    )
    verify["spec"]["artifactInputs"] = [
        {"ref": refs["site"], "path": "site"},
        {"ref": refs["big.bin"], "path": "big.bin"},
    ]
    session.post(f"{base}{API}/runs", json=verify, timeout=10)
    assert wait_until(lambda: phase(session, base, "verify") in ("Succeeded", "Failed"), timeout=60)
    assert phase(session, base, "verify") == "Succeeded", session.get(
        f"{base}{API}/runs/verify", timeout=5
    ).json()["status"]

    prefix = f"ci/namespaces/default/runs/{uid}/"
    assert s3.list_objects_v2(Bucket="e2e-artifacts", Prefix=prefix)["KeyCount"] == 2
    session.delete(f"{base}{API}/runs/build", timeout=5)
    assert wait_until(
        lambda: session.get(f"{base}{API}/runs/build", timeout=5).status_code == 404, timeout=30
    ), "the finalizer never let go"
    assert s3.list_objects_v2(Bucket="e2e-artifacts", Prefix=prefix)["KeyCount"] == 0
