"""``krt artifacts get RUN NAME``: an artifact's bytes through the Run's ``artifacts``
subresource, checked against the sha256 digest in ``status.artifactRefs`` while they are
written; a mismatch (or a broken download) removes the partial file."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .connection import Connection, stream_chunks
from .errors import KrtError
from .resources import RUNS


def artifact_ref(run: dict[str, Any], name: str) -> dict[str, Any]:
    refs = (run.get("status") or {}).get("artifactRefs") or []
    for ref in refs:
        if isinstance(ref, dict) and ref.get("name") == name:
            return ref
    known = ", ".join(str(r.get("name")) for r in refs if isinstance(r, dict)) or "none"
    raise KrtError(f'Run "{run["metadata"]["name"]}" has no artifact "{name}" (it has: {known})')


def expected_digest(ref: dict[str, Any]) -> str | None:
    digest = str(ref.get("digest") or "")
    if not digest:
        return None
    algorithm, _, value = digest.partition(":")
    if algorithm != "sha256" or not value:
        raise KrtError(f'artifact "{ref.get("name")}": unsupported digest "{digest}"')
    return value.lower()


def download(
    conn: Connection, namespace: str, run_name: str, name: str, dest: str | None
) -> Path | None:
    """Write the artifact to ``dest`` (default: its name in the current directory; ``-``:
    stdout). Returns the path written (None for stdout)."""
    run = conn.json("GET", RUNS.path(namespace, run_name))
    ref = artifact_ref(run, name)
    want = expected_digest(ref)
    path = RUNS.path(namespace, run_name, "artifacts") + "/" + quote(name, safe="")
    response = conn.request(
        "GET", path, accept="application/octet-stream, */*", timeout=(30.0, 300.0)
    )
    target = None if dest == "-" else Path(dest or name)
    partial = None if target is None else target.with_name(f".{target.name}.krt-partial")
    digest = hashlib.sha256()
    try:
        out = sys.stdout.buffer if partial is None else open(partial, "wb")  # noqa: SIM115
        try:
            for chunk in stream_chunks(response):
                digest.update(chunk)
                out.write(chunk)
        finally:
            if partial is not None:
                out.close()
        got = digest.hexdigest()
        if want and got != want:
            raise KrtError(
                f'artifact "{name}": digest mismatch (expected sha256:{want}, got sha256:{got}); '
                "nothing was kept"
            )
        if partial is not None and target is not None:
            os.replace(partial, target)
    finally:
        if partial is not None and partial.exists():
            partial.unlink()
    return target
