"""The S3 ArtifactStore against moto's S3 server over real HTTP."""

from __future__ import annotations

import io
import socket
import uuid

import boto3
import pytest
from botocore.stub import Stubber

from runtimed.stores import RefOutOfScope, RunScope, S3Store, StoreError

MIB = 1024 * 1024
SCOPE = RunScope("ci", "uid-1")
RUN_KEY = "namespaces/ci/runs/uid-1"
DUMMY = {"aws_access_key_id": "AKIDTESTDUMMY", "aws_secret_access_key": "dummy-secret-value"}


@pytest.fixture(scope="module")
def s3(s3_endpoint):
    """A plain boto3 client to set up and inspect the server."""
    return boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", **DUMMY)


@pytest.fixture
def bucket(s3):
    name = f"artifacts-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def make_store(endpoint: str, bucket: str, **options) -> S3Store:
    options.setdefault("credentials", DUMMY)
    return S3Store(bucket, region="us-east-1", endpoint=endpoint, force_path_style=True, **options)


@pytest.fixture
def store(s3_endpoint, bucket):
    return make_store(s3_endpoint, bucket, prefix="ci/x")


def put(
    store,
    data: bytes,
    name: str = "out.tar",
    scope: RunScope = SCOPE,
    content_type: str = "application/x-tar",
) -> dict:
    location = store.put(scope, name, io.BytesIO(data), len(data), content_type)
    return {"name": name, "driver": "s3", "type": "archive", "location": location}


def keys(s3, bucket: str) -> set[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {item["Key"] for page in pages for item in page.get("Contents", [])}


def test_round_trip_keeps_bytes_and_content_type(store, s3, bucket):
    data = bytes(range(256)) * 4000

    ref = put(store, data, content_type="application/gzip")

    assert ref["location"] == {"s3": {"bucket": bucket, "key": f"ci/x/{RUN_KEY}/out.tar"}}
    head = s3.head_object(Bucket=bucket, Key=f"ci/x/{RUN_KEY}/out.tar")
    assert head["ContentType"] == "application/gzip"
    assert head["ContentLength"] == len(data)
    stream = store.open(ref)
    try:
        assert stream.read() == data
    finally:
        stream.close()


def test_put_stores_exactly_size_bytes(store, s3, bucket):
    store.put(SCOPE, "head", io.BytesIO(b"0123456789"), 4, "text/plain")

    body = s3.get_object(Bucket=bucket, Key=f"ci/x/{RUN_KEY}/head")["Body"].read()
    assert body == b"0123"


def test_a_short_source_fails_and_stores_nothing(store, s3, bucket):
    with pytest.raises(StoreError, match="short"):
        store.put(SCOPE, "out.tar", io.BytesIO(b"abc"), 10, "application/x-tar")

    assert keys(s3, bucket) == set()


def test_a_short_source_aborts_a_multipart_upload(s3_endpoint, s3, bucket):
    store = make_store(s3_endpoint, bucket, upload_part_size=5 * MIB)

    with pytest.raises(StoreError, match="short"):
        store.put(SCOPE, "big", io.BytesIO(b"q" * (11 * MIB)), 12 * MIB, "application/x-tar")

    assert keys(s3, bucket) == set()
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


@pytest.mark.parametrize(
    "prefix, key",
    [
        ("", f"{RUN_KEY}/out.tar"),
        ("/ci//x/", f"ci/x/{RUN_KEY}/out.tar"),
        ("ci", f"ci/{RUN_KEY}/out.tar"),
    ],
)
def test_the_key_is_the_layout_below_the_normalised_prefix(s3_endpoint, s3, bucket, prefix, key):
    store = make_store(s3_endpoint, bucket, prefix=prefix)

    ref = put(store, b"payload")

    assert ref["location"]["s3"]["key"] == key
    assert keys(s3, bucket) == {key}
    assert store.open(ref).read() == b"payload"


def test_an_object_above_the_part_size_goes_multipart(s3_endpoint, s3, bucket):
    store = make_store(s3_endpoint, bucket, upload_part_size=5 * MIB, upload_concurrency=2)
    data = (bytes(range(256)) * 4 * 1024) * 11  # 11 MiB

    ref = put(store, data)

    key = ref["location"]["s3"]["key"]
    assert s3.head_object(Bucket=bucket, Key=key)["ETag"].strip('"').endswith("-3")
    assert s3.head_object(Bucket=bucket, Key=key, PartNumber=1)["PartsCount"] == 3
    assert store.open(ref).read() == data


def test_an_object_below_the_part_size_goes_in_one_part(s3_endpoint, s3, bucket):
    store = make_store(s3_endpoint, bucket, upload_part_size=12 * MIB)
    data = b"z" * (11 * MIB)

    ref = put(store, data)

    etag = s3.head_object(Bucket=bucket, Key=ref["location"]["s3"]["key"])["ETag"]
    assert "-" not in etag
    assert store.open(ref).read() == data


def test_second_put_replaces_the_object(store, s3, bucket):
    put(store, b"first attempt", content_type="text/plain")
    ref = put(store, b"second", content_type="application/json")

    assert keys(s3, bucket) == {f"ci/x/{RUN_KEY}/out.tar"}
    assert store.open(ref).read() == b"second"
    head = s3.head_object(Bucket=bucket, Key=f"ci/x/{RUN_KEY}/out.tar")
    assert head["ContentType"] == "application/json"


def test_path_style_follows_force_path_style(s3_endpoint, bucket):
    path_style = make_store(s3_endpoint, bucket)
    auto = S3Store(bucket, endpoint=s3_endpoint, credentials=DUMMY)

    assert path_style.client.meta.config.s3["addressing_style"] == "path"
    assert auto.client.meta.config.s3["addressing_style"] == "auto"
    config = path_style.client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (5, 60)
    # botocore reads retries.max_attempts as retries: 3 of them after the first attempt.
    assert config.retries == {"total_max_attempts": 4, "mode": "standard"}
    assert path_style.transfer_config.multipart_threshold == 8 * MIB
    assert path_style.transfer_config.max_concurrency == 4


def out_of_scope_refs(bucket: str) -> list[dict]:
    good = f"ci/x/{RUN_KEY}/out.tar"
    refs = [
        {"driver": "s3", "location": {"s3": {"bucket": "other-bucket", "key": good}}},
        {"driver": "filesystem", "location": {"s3": {"bucket": bucket, "key": good}}},
        {"driver": "s3", "location": {"filesystem": {"path": f"{RUN_KEY}/out.tar"}}},
        {"driver": "s3"},
    ]
    for key in (
        f"{RUN_KEY}/out.tar",
        f"other/{RUN_KEY}/out.tar",
        f"ci/xy/{RUN_KEY}/out.tar",
        f"ci/y/{RUN_KEY}/out.tar",
        f"ci/x/{RUN_KEY}/../../uid-2/out.tar",
        f"ci/x/{RUN_KEY}/..",
        f"ci/x/{RUN_KEY}/./out.tar",
        "ci/x/namespaces/ci/runs/../out.tar",
        f"ci/x/{RUN_KEY}//out.tar",
        f"ci/x/{RUN_KEY}/a/b",
        f"ci/x/{RUN_KEY}",
        "ci/x/namespaces/ci/jobs/uid-1/out.tar",
        f"ci/x//{RUN_KEY}/out.tar",
        "ci/x/",
        "",
        None,
    ):
        refs.append({"driver": "s3", "location": {"s3": {"bucket": bucket, "key": key}}})
    return refs


@pytest.mark.parametrize("index", range(len(out_of_scope_refs("b"))))
def test_refs_outside_the_store_are_refused(store, s3, bucket, index):
    ref = out_of_scope_refs(bucket)[index]
    # Each key exists, so only the scope check can refuse it.
    key = (ref.get("location") or {}).get("s3", {}).get("key")
    if isinstance(key, str) and key and not key.endswith("/"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"planted")

    with pytest.raises(RefOutOfScope):
        store.open(ref)


def test_a_missing_object_is_a_clear_store_error(store, bucket):
    ref = {
        "driver": "s3",
        "location": {"s3": {"bucket": bucket, "key": f"ci/x/{RUN_KEY}/gone.tar"}},
    }

    with pytest.raises(StoreError, match="does not exist") as raised:
        store.open(ref)
    assert f"ci/x/{RUN_KEY}/gone.tar" in str(raised.value)
    assert not isinstance(raised.value, RefOutOfScope)


def test_a_missing_bucket_is_a_clear_store_error(s3_endpoint):
    store = make_store(s3_endpoint, "no-such-bucket-here")
    ref = {
        "driver": "s3",
        "location": {"s3": {"bucket": "no-such-bucket-here", "key": f"{RUN_KEY}/out.tar"}},
    }

    with pytest.raises(StoreError, match='S3 bucket "no-such-bucket-here" does not exist'):
        put(store, b"payload")
    with pytest.raises(StoreError, match='S3 bucket "no-such-bucket-here" does not exist'):
        store.open(ref)
    with pytest.raises(StoreError, match='S3 bucket "no-such-bucket-here" does not exist'):
        store.delete_run(SCOPE)


def test_a_missing_bucket_fails_a_multipart_upload_clearly(s3_endpoint):
    store = make_store(s3_endpoint, "no-such-bucket-either", upload_part_size=5 * MIB)

    with pytest.raises(StoreError, match='S3 bucket "no-such-bucket-either" does not exist'):
        put(store, b"m" * (6 * MIB))


def test_no_credentials_is_a_clear_store_error(s3_endpoint, bucket, monkeypatch, tmp_path):
    for variable in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store = make_store(s3_endpoint, bucket, credentials=None)

    with pytest.raises(StoreError, match="no credentials for the S3 artifact store"):
        put(store, b"payload")


def test_an_unreachable_endpoint_is_a_clear_store_error(bucket):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = make_store(f"http://127.0.0.1:{port}", bucket)

    with pytest.raises(StoreError, match="cannot reach the S3 endpoint") as raised:
        put(store, b"payload")
    assert DUMMY["aws_secret_access_key"] not in str(raised.value)


@pytest.mark.parametrize(
    "code, status, expected",
    [
        ("AccessDenied", 403, "access denied to S3 bucket"),
        ("InvalidAccessKeyId", 403, "rejected the artifact store's credentials"),
        ("SlowDown", 503, "S3 error SlowDown"),
    ],
)
def test_service_errors_become_store_errors_without_secrets(
    s3_endpoint, bucket, code, status, expected
):
    store = make_store(s3_endpoint, bucket)
    ref = {"driver": "s3", "location": {"s3": {"bucket": bucket, "key": f"{RUN_KEY}/out.tar"}}}

    with Stubber(store.client) as stubber:
        stubber.add_client_error(
            "get_object", service_error_code=code, service_message="nope", http_status_code=status
        )
        with pytest.raises(StoreError, match=expected) as raised:
            store.open(ref)
    assert DUMMY["aws_secret_access_key"] not in str(raised.value)
    assert DUMMY["aws_access_key_id"] not in str(raised.value)


def test_delete_removes_one_object_and_ignores_a_missing_one(store, s3, bucket):
    put(store, b"a", name="a")
    put(store, b"b", name="b")

    store.delete(SCOPE, "a")
    store.delete(SCOPE, "a")

    assert keys(s3, bucket) == {f"ci/x/{RUN_KEY}/b"}


def test_delete_run_in_batches_removes_all_and_only_that_run(s3_endpoint, s3, bucket):
    store = make_store(s3_endpoint, bucket, prefix="ci/x", delete_batch=2)
    for index in range(5):
        put(store, f"{index}".encode(), name=f"part-{index}")
    put(store, b"keep", scope=RunScope("ci", "uid-10"))
    put(store, b"keep", scope=RunScope("other", "uid-1"))
    s3.put_object(Bucket=bucket, Key=f"{RUN_KEY}/outside-prefix", Body=b"keep")
    calls = []
    store.client.meta.events.register(
        "before-call.s3.DeleteObjects", lambda **kwargs: calls.append(kwargs)
    )

    assert store.delete_run(SCOPE) == 5

    assert len(calls) == 3
    assert keys(s3, bucket) == {
        "ci/x/namespaces/ci/runs/uid-10/out.tar",
        "ci/x/namespaces/other/runs/uid-1/out.tar",
        f"{RUN_KEY}/outside-prefix",
    }
    assert store.delete_run(SCOPE) == 0


def test_delete_run_reports_per_key_errors(s3_endpoint, bucket):
    store = make_store(s3_endpoint, bucket, delete_batch=10)
    put(store, b"a", name="a")
    key = f"{RUN_KEY}/a"

    with Stubber(store.client) as stubber:
        stubber.add_response(
            "list_objects_v2", {"Contents": [{"Key": key}], "KeyCount": 1, "IsTruncated": False}
        )
        stubber.add_response(
            "delete_objects",
            {"Errors": [{"Key": key, "Code": "AccessDenied", "Message": "Access Denied"}]},
        )
        with pytest.raises(StoreError, match=f"refused to delete {key} \\(AccessDenied\\)"):
            store.delete_run(SCOPE)
