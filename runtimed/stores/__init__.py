"""ArtifactStores: the filesystem store (a shared volume) and the S3 store (boto3)."""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from .s3 import S3Store

__all__ = [
    "ArtifactStore",
    "FilesystemStore",
    "RefOutOfScope",
    "RunScope",
    "S3Store",
    "StoreError",
    "build_store",
    "check_name",
    "parse_relative",
]


def __getattr__(name: str) -> type["S3Store"]:
    # S3Store loads boto3, which most processes (web, pods on a filesystem store) never need
    if name == "S3Store":
        from .s3 import S3Store

        return S3Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
