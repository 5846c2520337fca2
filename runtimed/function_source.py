"""A function Run's working directory: its source prepared where the handler finds it.

Inline source is written to ``source.inlinePath`` below a fresh directory of the attempt (the
path is checked again here: relative, no empty, ``.`` or ``..`` segment, at most 4096 bytes),
never through a symlink; a repository is checked out as a task's is and its checkout is the
working directory; a Run without source works in its workspace. runtimed does not read the
handler: the Runtime Server alone knows its notation (kruntimes' function-inline-source).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from .payload import Source
from .staging import CHECKOUT_NAME, PrepareError, clone

MAX_INLINE_PATH_BYTES = 4096
SOURCE_DIR = "function"


def check_inline_path(value: str | None) -> PurePosixPath:
    if not value:
        raise PrepareError("source.inlinePath is required for a function with inline source")
    if len(value.encode()) > MAX_INLINE_PATH_BYTES or "\0" in value:
        raise PrepareError(f"source.inlinePath is longer than {MAX_INLINE_PATH_BYTES} bytes")
    parts = value.split("/")
    if value.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise PrepareError(
            f"source.inlinePath {value!r} must be a relative path without empty, '.' or '..' "
            "segments"
        )
    return PurePosixPath(value)


def prepare(source: Source, attempt_root: Path, workspace: Path, *, git_timeout: float) -> Path:
    """The directory the function is registered with; PrepareError when it cannot be made."""
    if source.inline is not None:
        relative = check_inline_path(source.inline_path)
        root = attempt_root / SOURCE_DIR
        try:
            root.mkdir(parents=True, exist_ok=False)
            parent = root
            for part in relative.parts[:-1]:
                parent = parent / part
                parent.mkdir()  # a fresh tree: nothing here can be a symlink
            target = root / relative
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(source.inline)
        except OSError as exc:
            raise PrepareError(f"cannot write the inline source: {exc}") from exc
        return root
    if source.repo_url is not None:
        checkout = attempt_root / CHECKOUT_NAME
        clone(source.repo_url, source.commit_sha, checkout, timeout=git_timeout)
        return checkout
    return workspace


def digest(
    source: Source, handler: str, env: Mapping[str, str], idle_timeout_seconds: int | None
) -> str:
    """The registration digest (the contract's idempotency check): SHA-256 over the immutable
    inputs, canonical JSON, without the working directory's path."""
    inputs = {
        "source": {
            "inline": hashlib.sha256(source.inline.encode()).hexdigest()
            if source.inline is not None
            else None,
            "inlinePath": source.inline_path,
            "repoURL": source.repo_url,
            "commitSHA": source.commit_sha,
        },
        "handler": handler,
        "env": sorted(env.items()),
        "idleTimeoutSeconds": idle_timeout_seconds or 0,
    }
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()
