"""ArtifactStores: the filesystem store (a shared volume) and the S3 store (boto3)."""

from .base import (
    ArtifactStore,
    RefOutOfScope,
    RunScope,
    StoreError,
    check_name,
    parse_relative,
)
from .factory import build_store
from .filesystem import FilesystemStore
from .s3 import S3Store

__all__ = ["ArtifactStore", "FilesystemStore", "RefOutOfScope", "RunScope", "S3Store",
           "StoreError", "build_store", "check_name", "parse_relative"]
