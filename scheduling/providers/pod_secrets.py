"""A local Runtime Pod's Secrets, laid out as a Secret volume: ``<dir>/<secret>/<key>`` files.

kubelet mounts a Pod's Secret volumes; the local provider writes the same layout from the
Secret objects in the database into the pod's own directory (``KRUNTIME_SECRETS_DIR``), only
the Secrets the pod's Runtime references, readable by this user alone (dirs 0700, files 0600,
each file written atomically), and removes it with the pod.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from portal.machinery.errors import StatusError
from portal.secrets import MissingReference, secret_data

log = logging.getLogger(__name__)
DIR_MODE = 0o700
FILE_MODE = 0o600


def referenced_secrets(runtime_spec: Mapping[str, Any]) -> list[str]:
    """The Secrets a Runtime's spec names: its S3 artifact store's credentials."""
    s3 = ((runtime_spec or {}).get("artifactStore") or {}).get("s3") or {}
    name = s3.get("credentialsSecretName")
    return [name] if isinstance(name, str) and name else []


def _safe_component(name: str) -> bool:
    return bool(name) and "/" not in name and "\0" not in name and name not in (".", "..")


def _private_dir(path: Path) -> None:
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask, and an old dir keeps its own


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        os.fchmod(handle, FILE_MODE)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_secrets(root: Path, namespace: str, names: list[str]) -> list[str]:
    """Write each named Secret of ``namespace`` under ``root``; returns those written. A
    missing Secret is logged and left out (runtimed then says it is not mounted)."""
    _private_dir(root)
    written = []
    for name in names:
        if not _safe_component(name):
            continue
        try:
            data = secret_data(namespace, name)
        except (MissingReference, StatusError) as exc:
            log.warning("Secret not written for the pod: %s", exc)
            continue
        directory = root / name
        _private_dir(directory)
        for key, value in data.items():
            if _safe_component(key):
                _write_atomically(directory / key, value)
        for stale in directory.iterdir():  # keys removed from the Secret since
            if stale.name not in data:
                stale.unlink(missing_ok=True)
        written.append(name)
    return written


def remove_secrets(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
