"""The rules an artifact name and an ArtifactRef location obey, wherever they are checked.

The API applies them at admission (``spec.artifactInputs``, ``status.artifactRefs``), runtimed's
collector to the entries a step leaves, and the stores to every name they write or open; one
definition keeps the three from drifting apart. Pure functions: no I/O, no imports beyond the
standard library, so the control plane may import them too.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TypedDict

MAX_NAME_BYTES = 255


class FilesystemLocation(TypedDict):
    path: str  # namespaces/<ns>/runs/<uid>/<name>, below the volume's root
    volumeClaimName: str


class S3Location(TypedDict):
    bucket: str
    key: str  # [prefix/]namespaces/<ns>/runs/<uid>/<name>


class ArtifactLocation(TypedDict, total=False):
    """An ArtifactRef ``location``: the one key its driver names."""

    filesystem: FilesystemLocation
    s3: S3Location


class ArtifactRef(TypedDict):
    """An ArtifactRef as runtimed reports it in ``status.artifactRefs``."""

    name: str
    driver: str
    type: str
    location: ArtifactLocation
    sizeBytes: int
    digest: str
    contentType: str
    createdAt: str


@dataclass(frozen=True)
class Problem:
    """Why a value breaks a rule; ``too_long`` marks a length limit (FieldValueTooLong)."""

    message: str
    too_long: bool = False


def artifact_name_problem(name: object) -> Problem | None:
    """An artifact name is one path component: non-empty UTF-8 of at most 255 bytes, no
    ``/``, ``\\`` or NUL, and not ``.`` or ``..``. None when ``name`` is fine."""
    if not isinstance(name, str) or not name:
        return Problem("must be a non-empty string")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates: from JSON escapes or undecodable file names
        return Problem("must be valid UTF-8")
    if size > MAX_NAME_BYTES:
        return Problem(
            f"is {size} bytes; may not be more than {MAX_NAME_BYTES} bytes", too_long=True
        )
    if name in (".", ".."):
        return Problem("must not be '.' or '..'")
    if "/" in name or "\\" in name or "\x00" in name:
        return Problem("must be a single path component (no '/', '\\' or NUL)")
    return None


def location_path_problem(path: object) -> Problem | None:
    """A location inside its store: a non-empty relative path that stays below the store's
    root once cleaned (``a/../b`` is fine, ``a/../../b`` and ``/tmp/x`` are not)."""
    if not isinstance(path, str) or not path:
        return Problem("must be a non-empty string")
    if path.startswith("/"):
        return Problem("must be a relative path")
    if "\x00" in path:
        return Problem("must not contain NUL")
    clean = posixpath.normpath(path)
    if clean in (".", "..") or clean.startswith("../"):
        return Problem("must stay inside the store's root after cleaning")
    return None


def ref_namespace(ref: object) -> str | None:
    """The namespace an ArtifactRef points into, or None when its location does not say.

    Every store keeps an artifact at ``namespaces/<ns>/runs/<uid>/<name>``: a filesystem
    ``path`` is exactly that, an S3 ``key`` ends with it (the store strips its own prefix and
    accepts nothing longer). A location of any other shape, or one whose driver's key is
    missing, opens nothing; its namespace cannot be told, so it is None.
    """
    location = ref.get("location") if isinstance(ref, dict) else None
    driver = ref.get("driver") if isinstance(ref, dict) else None
    entry = location.get(driver) if isinstance(location, dict) and isinstance(driver, str) else None
    if not isinstance(entry, dict):
        return None
    value = entry.get("path" if driver == "filesystem" else "key")
    if not isinstance(value, str) or not value or value.startswith("/"):
        return None
    # a filesystem path is admitted once it stays inside its root after cleaning, so its
    # cleaned form says where it points (the store itself opens only the exact form)
    parts = (posixpath.normpath(value) if driver == "filesystem" else value).split("/")
    if driver == "filesystem" and len(parts) != 5:
        return None
    tail = parts[-5:]
    if len(tail) != 5 or tail[0] != "namespaces" or tail[2] != "runs":
        return None
    if any(part in ("", ".", "..") or "\x00" in part for part in tail):
        return None
    return tail[1]
