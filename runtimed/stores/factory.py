"""Build a Runtime's ArtifactStore from its ``spec.artifactStore`` (already validated by the API)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import ArtifactStore, StoreError
from .filesystem import FilesystemStore

if TYPE_CHECKING:  # s3 imports boto3: only on first use (see _s3_store)
    from .s3 import S3Credentials

# Secret keys for each credential, as the Secret may spell them: ours first, then AWS's.
ACCESS_KEY_KEYS = ("accessKeyID", "AWS_ACCESS_KEY_ID")
SECRET_KEY_KEYS = ("secretAccessKey", "AWS_SECRET_ACCESS_KEY")
SESSION_TOKEN_KEYS = ("sessionToken", "AWS_SESSION_TOKEN")


# A Secret handed over directly, by its name: key -> bytes. Raises StoreError when there is
# no such Secret (the control plane reads it from its database; runtimed reads files).
SecretLookup = Callable[[str], Mapping[str, bytes]]


def build_store(
    spec: Mapping[str, Any],
    *,
    volumes_root: Path | None,
    secrets_dir: Path | None = None,
    secrets: SecretLookup | None = None,
) -> ArtifactStore:
    """The store ``spec`` names; volumes are mounted below ``volumes_root``. Secrets come from
    ``secrets`` when given, else from the Secret-volume layout under ``secrets_dir``."""
    driver = (spec or {}).get("driver")
    if driver == "filesystem":
        return _filesystem_store(spec.get("filesystem") or {}, volumes_root)
    if driver == "s3":
        return _s3_store(spec.get("s3") or {}, secrets_dir, secrets)
    raise StoreError(f"unknown artifact store driver {driver!r}")


def _filesystem_store(options: Mapping[str, Any], volumes_root: Path | None) -> FilesystemStore:
    claim = _component(options.get("volumeClaimName"), "filesystem.volumeClaimName")
    if volumes_root is None:
        raise StoreError("no artifact volumes are mounted on this pod")
    root = Path(volumes_root) / claim
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the artifact volume directory {root}: {exc.strerror or exc}"
        ) from None
    return FilesystemStore(root, claim)


def _s3_store(
    options: Mapping[str, Any], secrets_dir: Path | None, secrets: SecretLookup | None
) -> ArtifactStore:
    # boto3 is imported on first use: most processes never talk to S3
    from .s3 import DEFAULT_CONCURRENCY, DEFAULT_PART_SIZE, S3Store

    bucket = options.get("bucket")
    if not bucket:
        raise StoreError("the S3 artifact store names no bucket")
    secret_name = options.get("credentialsSecretName")
    credentials = None
    if secret_name and secrets is not None:
        credentials = s3_credentials_from(secret_name, secrets)
    elif secret_name:
        credentials = read_s3_credentials(secrets_dir, secret_name)
    return S3Store(
        bucket,
        prefix=options.get("prefix") or "",
        region=options.get("region"),
        endpoint=options.get("endpoint"),
        force_path_style=bool(options.get("forcePathStyle")),
        credentials=credentials,
        upload_part_size=options.get("uploadPartSize") or DEFAULT_PART_SIZE,
        upload_concurrency=options.get("uploadConcurrency") or DEFAULT_CONCURRENCY,
    )


# A Secret's value by key: the text (newline-trimmed), None when absent or empty.
ValueOf = Callable[[str], str | None]


def read_s3_credentials(secrets_dir: Path | None, secret_name: str) -> S3Credentials:
    """boto3 Session keywords from Secret ``secret_name`` mounted as one file per key."""
    _component(secret_name, "s3.credentialsSecretName")
    if secrets_dir is None:
        raise StoreError(f'the S3 credentials Secret "{secret_name}" is not mounted on this pod')
    directory = Path(secrets_dir) / secret_name
    if not directory.is_dir():
        raise StoreError(
            f'the S3 credentials Secret "{secret_name}" is not mounted on this pod (no {directory})'
        )
    return _credentials(secret_name, lambda key: _file_value(directory, key))


def s3_credentials_from(secret_name: str, secrets: SecretLookup) -> S3Credentials:
    """boto3 Session keywords from Secret ``secret_name`` handed over as a mapping."""
    data = secrets(secret_name)

    def value_of(key: str) -> str | None:
        raw = data.get(key)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8").rstrip("\r\n") or None
        except UnicodeDecodeError:
            raise StoreError(
                f"key {key} of the S3 credentials Secret {secret_name!r} is not UTF-8 text"
            ) from None

    return _credentials(secret_name, value_of)


def _credentials(secret_name: str, value_of: ValueOf) -> S3Credentials:
    access_key = _first(value_of, ACCESS_KEY_KEYS)
    secret_key = _first(value_of, SECRET_KEY_KEYS)
    if access_key is None or secret_key is None:  # _first: None or a non-empty value
        missing = [
            " or ".join(keys)
            for keys, value in ((ACCESS_KEY_KEYS, access_key), (SECRET_KEY_KEYS, secret_key))
            if not value
        ]
        raise StoreError(
            f'the S3 credentials Secret "{secret_name}" lacks the keys {"; ".join(missing)}'
        )
    credentials: S3Credentials = {
        "aws_access_key_id": access_key,
        "aws_secret_access_key": secret_key,
    }
    token = _first(value_of, SESSION_TOKEN_KEYS)
    if token:
        credentials["aws_session_token"] = token
    return credentials


def _first(value_of: ValueOf, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = value_of(key)
        if value:
            return value
    return None


def _file_value(directory: Path, key: str) -> str | None:
    # A Secret volume's files are symlinks into its ..data directory: follow them.
    path = directory / key
    try:
        return path.read_text(encoding="utf-8").rstrip("\r\n") or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(
            f"cannot read key {key} of the S3 credentials Secret "
            f"{directory.name!r}: {type(exc).__name__}"
        ) from None


def _component(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or "/" in value or value in (".", ".."):
        raise StoreError(f"artifactStore {field} {value!r} cannot name a directory")
    return value
