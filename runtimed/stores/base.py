"""The ArtifactStore interface: where a Run's artifacts live outside the database.

Every store keeps one Run's artifacts under ``namespaces/<ns>/runs/<run-uid>/<name>`` (the
filesystem store below its root, the S3 store below its optional prefix), and answers with an
ArtifactRef ``location`` that names exactly that object. ``open`` refuses a ref that lies
outside the store's own scope: a ref carries coordinates, never authorization.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from ..refs import ArtifactLocation, artifact_name_problem

# What makes a namespace or Run UID safe as one directory: no separators, no NUL, not "." or
# "..". Artifact names follow ``runtimed.refs``.
_COMPONENT = re.compile(r"^(?!\.{1,2}$)[^/\x00]{1,255}$")


class StoreError(Exception):
    """The store cannot do what was asked; the message is meant for a Run's status."""


class RefOutOfScope(StoreError):
    """An ArtifactRef that names an object outside this store's root, bucket or prefix."""


@dataclass(frozen=True)
class RunScope:
    """The Run an artifact belongs to: its namespace and UID."""

    namespace: str
    run_uid: str

    def __post_init__(self) -> None:
        for part in (self.namespace, self.run_uid):
            if not _COMPONENT.match(part):
                raise StoreError(f"{part!r} cannot name a store directory")

    def relative(self, name: str = "") -> str:
        """``namespaces/<ns>/runs/<uid>[/<name>]``: the same under every driver."""
        base = f"namespaces/{self.namespace}/runs/{self.run_uid}"
        if not name:
            return base
        check_name(name)
        return f"{base}/{name}"


def check_name(name: str) -> str:
    problem = artifact_name_problem(name)
    if problem is not None:
        raise StoreError(f"artifact name {name!r} {problem.message}")
    return name


def parse_relative(relative: object) -> tuple[RunScope, str]:
    """The RunScope and name of ``namespaces/<ns>/runs/<uid>/<name>``; RefOutOfScope otherwise."""
    parts = relative.split("/") if isinstance(relative, str) else []
    if len(parts) != 5 or parts[0] != "namespaces" or parts[2] != "runs":
        raise RefOutOfScope(f"{relative!r} is not of the form namespaces/<ns>/runs/<uid>/<name>")
    try:
        return RunScope(parts[1], parts[3]), check_name(parts[4])
    except StoreError as exc:
        raise RefOutOfScope(f"{relative!r} is not a store path: {exc}") from None


class ArtifactStore(Protocol):
    """put / open / delete / delete_run: all a Run's artifacts need."""

    driver: str  # "filesystem" or "s3": the ArtifactRef ``driver``

    def put(
        self, scope: RunScope, name: str, source: BinaryIO, size: int, content_type: str
    ) -> ArtifactLocation:
        """Store ``size`` bytes read from ``source`` as ``name``; return the ref ``location``.

        Replaces an earlier object of the same name (a retried attempt uploads again).
        """

    def open(self, ref: Mapping[str, Any]) -> BinaryIO:
        """A readable binary stream of the object an ArtifactRef names (the caller closes it).

        Raises RefOutOfScope for a ref outside this store, StoreError when it is missing.
        """

    def delete(self, scope: RunScope, name: str) -> None:
        """Remove one artifact; a missing one is not an error."""

    def delete_run(self, scope: RunScope) -> int:
        """Remove everything stored for the Run; returns how many objects went."""
