"""ArtifactStores: the filesystem store (a shared volume) and the S3 store (boto3)."""

from .base import ArtifactStore, RefOutOfScope, RunScope, StoreError, check_name

__all__ = ["ArtifactStore", "RefOutOfScope", "RunScope", "StoreError", "check_name"]
