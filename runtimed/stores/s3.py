"""The S3 ArtifactStore: objects at ``[prefix/]namespaces/<ns>/runs/<uid>/<name>`` in one bucket.

Uploads go through boto3's transfer manager, so an object above ``upload_part_size`` goes up as
a multipart upload. Every boto3/botocore failure becomes a StoreError whose message names the
bucket or key and never a credential.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO, NotRequired, TypedDict

import boto3
from boto3.exceptions import S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from ..refs import ArtifactLocation
from .base import RefOutOfScope, RunScope, StoreError, check_name, parse_relative

MIB = 1024 * 1024
DEFAULT_PART_SIZE = 8 * MIB
DEFAULT_CONCURRENCY = 4
DEFAULT_DELETE_BATCH = 1000  # the most S3 DeleteObjects takes at once
_MISSING_OBJECT = {"NoSuchKey", "404", "NotFound"}
_DENIED = {"AccessDenied", "403", "Forbidden", "AllAccessDisabled"}
_BAD_CREDENTIALS = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
}

# boto3 ships no type stubs (types-boto3[s3] would give its S3Client): the client is untyped.
S3Client = Any


class S3Credentials(TypedDict):
    """boto3 Session keywords read from a credentials Secret."""

    aws_access_key_id: str
    aws_secret_access_key: str
    aws_session_token: NotRequired[str]


class S3Store:
    """Artifacts as objects in ``bucket`` below ``prefix``."""

    driver = "s3"

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        region: str | None = None,
        endpoint: str | None = None,
        force_path_style: bool = False,
        credentials: S3Credentials | None = None,
        upload_part_size: int = DEFAULT_PART_SIZE,
        upload_concurrency: int = DEFAULT_CONCURRENCY,
        client: S3Client | None = None,
        delete_batch: int = DEFAULT_DELETE_BATCH,
    ) -> None:
        self.bucket = bucket
        self.prefix = "/".join(part for part in (prefix or "").split("/") if part)
        self.endpoint = endpoint
        self.delete_batch = delete_batch
        self.transfer_config = TransferConfig(
            multipart_threshold=upload_part_size,
            multipart_chunksize=upload_part_size,
            max_concurrency=upload_concurrency,
        )
        # The source is read part by part into memory: keep that to a few parts (default 10).
        self.transfer_config.max_in_memory_upload_chunks = 2 * upload_concurrency
        self.client = client or make_client(
            region=region,
            endpoint=endpoint,
            force_path_style=force_path_style,
            credentials=credentials,
        )

    def key(self, scope: RunScope, name: str = "") -> str:
        """``[prefix/]namespaces/<ns>/runs/<uid>[/<name>]``."""
        relative = scope.relative(name)
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def put(
        self, scope: RunScope, name: str, source: BinaryIO, size: int, content_type: str
    ) -> ArtifactLocation:
        key = self.key(scope, check_name(name))
        try:
            self.client.upload_fileobj(
                ExactReader(source, size, key),
                self.bucket,
                key,
                ExtraArgs={"ContentType": content_type},
                Config=self.transfer_config,
            )
        except StoreError:
            raise
        except Exception as exc:  # s3transfer re-raises whatever a worker thread met
            raise self._error(exc, f"cannot upload {key}") from None
        return {"s3": {"bucket": self.bucket, "key": key}}

    def open(self, ref: Mapping[str, Any]) -> BinaryIO:
        key = self._key_of(ref)
        try:
            body: BinaryIO = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            return body
        except Exception as exc:
            raise self._error(exc, f"cannot read {key}", key=key) from None

    def delete(self, scope: RunScope, name: str) -> None:
        key = self.key(scope, check_name(name))
        try:
            self.client.delete_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            raise self._error(exc, f"cannot delete {key}") from None

    def delete_run(self, scope: RunScope) -> int:
        run_prefix = self.key(scope) + "/"  # the slash keeps run "a" from matching run "ab"
        deleted = 0
        batch: list[str] = []
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=run_prefix
            )
            for page in pages:
                for item in page.get("Contents", []):
                    batch.append(item["Key"])
                    if len(batch) >= self.delete_batch:
                        deleted += self._delete_keys(batch)
                        batch = []
            if batch:
                deleted += self._delete_keys(batch)
        except StoreError:
            raise
        except Exception as exc:
            raise self._error(exc, f"cannot delete {run_prefix}") from None
        return deleted

    def _delete_keys(self, keys: list[str]) -> int:
        answer = self.client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True}
        )
        errors = answer.get("Errors") or []
        if errors:
            shown = ", ".join(f"{error.get('Key')} ({error.get('Code')})" for error in errors[:5])
            more = f" and {len(errors) - 5} more" if len(errors) > 5 else ""
            raise StoreError(f"S3 bucket {self.bucket!r} refused to delete {shown}{more}")
        return len(keys)

    def _key_of(self, ref: Mapping[str, Any]) -> str:
        if not isinstance(ref, dict) or ref.get("driver") != self.driver:
            raise RefOutOfScope("the artifact ref does not name an S3 artifact")
        location = (ref.get("location") or {}).get("s3")
        if not isinstance(location, dict):
            raise RefOutOfScope("the artifact ref has no location.s3")
        if location.get("bucket") != self.bucket:
            raise RefOutOfScope(
                f"the artifact lives in S3 bucket {location.get('bucket')!r}, "
                f"not in {self.bucket!r}"
            )
        key = location.get("key")
        relative = key
        if self.prefix and isinstance(key, str):
            if not key.startswith(self.prefix + "/"):
                raise RefOutOfScope(f"S3 key {key!r} lies outside the prefix {self.prefix!r}")
            relative = key[len(self.prefix) + 1 :]
        parse_relative(relative)
        assert isinstance(key, str)  # parse_relative refuses anything but a string
        return key

    def _error(self, exc: Exception, action: str, *, key: str | None = None) -> StoreError:
        return StoreError(
            describe_error(exc, action, bucket=self.bucket, key=key, endpoint=self.endpoint)
        )


class ExactReader:
    """Exactly ``size`` bytes of ``source``; a StoreError if it ends sooner.

    Not seekable on purpose: boto3 then reads parts in order instead of seeking the source.
    """

    def __init__(self, source: BinaryIO, size: int, shown: str) -> None:
        self.source = source
        self.size = size
        self.remaining = size
        self.shown = shown

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, amount: int | None = -1) -> bytes:
        wanted = self.remaining if amount is None or amount < 0 else min(amount, self.remaining)
        chunks = []
        while wanted > 0:
            chunk = self.source.read(wanted)[:wanted]
            if not chunk:
                raise StoreError(
                    f"the source of {self.shown} ended {self.remaining} bytes short of {self.size}"
                )
            chunks.append(chunk)
            wanted -= len(chunk)
            self.remaining -= len(chunk)
        return b"".join(chunks)


def make_client(
    *,
    region: str | None,
    endpoint: str | None,
    force_path_style: bool,
    credentials: S3Credentials | None,
) -> S3Client:
    """A boto3 S3 client; ``credentials`` holds boto3 Session keywords, None the default chain.

    ``credentials`` keys: ``aws_access_key_id``, ``aws_secret_access_key`` and optionally
    ``aws_session_token``.
    """
    session = boto3.session.Session(region_name=region, **(credentials or {}))
    config = Config(
        connect_timeout=5,
        read_timeout=60,
        retries={"max_attempts": 3, "mode": "standard"},
        s3={"addressing_style": "path" if force_path_style else "auto"},
    )
    return session.client("s3", endpoint_url=endpoint or None, config=config)


def describe_error(
    exc: BaseException,
    action: str,
    *,
    bucket: str,
    key: str | None = None,
    endpoint: str | None = None,
) -> str:
    """A message a user understands for a boto3/botocore failure; never a credential."""
    exc = _underlying(exc)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return (
            f"no credentials for the S3 artifact store: {action}: set credentialsSecretName "
            "on the Runtime's artifactStore or give the pod an AWS identity"
        )
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
        where = endpoint or "of AWS S3"
        return f"cannot reach the S3 endpoint {where}: {action}"
    if isinstance(exc, ReadTimeoutError):
        return f"the S3 endpoint timed out: {action}"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code == "NoSuchBucket":
            return f'S3 bucket "{bucket}" does not exist: {action}'
        if code in _MISSING_OBJECT:
            shown = f'S3 object "{key}"' if key else "the S3 object"
            return f'{shown} does not exist in bucket "{bucket}"'
        if code in _DENIED:
            return (
                f'access denied to S3 bucket "{bucket}": {action}: check the credentials '
                "and the bucket policy"
            )
        if code in _BAD_CREDENTIALS:
            return f"S3 rejected the artifact store's credentials ({code}): {action}"
        message = error.get("Message") or "no message"
        return f"S3 error {code or 'unknown'}: {message}: {action}"
    if isinstance(exc, StoreError):
        return str(exc)
    return f"S3 request failed: {type(exc).__name__}: {exc}: {action}"


def _underlying(exc: BaseException) -> BaseException:
    # upload_file and friends wrap the botocore error that says what happened.
    while isinstance(exc, S3UploadFailedError) and (exc.__cause__ or exc.__context__):
        exc = exc.__cause__ or exc.__context__
    return exc
