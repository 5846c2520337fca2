from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from jobclasses.localexec import delete


@pytest.fixture
def root(tmp_path: Path):
    """An executions root; whatever a test left running there is deleted afterwards."""
    path = tmp_path / "executions"
    yield path
    if path.is_dir():
        for entry in path.iterdir():
            if not entry.name.startswith("."):
                with contextlib.suppress(Exception):
                    delete({"type": "local", "dir": str(entry), "id": entry.name})
