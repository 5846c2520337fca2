"""What an execution runs: its steps, environment, timeout and inline files.

The spec is validated before anything is claimed on disk, and written once as ``spec.json``
(mode 0600: the env may carry secret values) for the supervisor to read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any


@dataclass(frozen=True)
class Step:
    name: str
    run: str  # a shell script, run as ``/bin/sh -ec <run>``


@dataclass(frozen=True)
class ExecutionSpec:
    steps: tuple[Step, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: int | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    working_dir: str = ""
    # secret values the supervisor replaces by *** in the log
    masked: tuple[str, ...] = ()


def check_relative_path(path: str, what: str, *, allow_empty: bool = False) -> None:
    """Refuse a path that could leave the work dir: absolute, ``..`` segments, NUL."""
    if path == "" and allow_empty:
        return
    if not path or "\0" in path:
        raise ValueError(f"{what} {path!r}: must be a non-empty relative path")
    if path.startswith("/"):
        raise ValueError(f"{what} {path!r}: must be relative, not absolute")
    if ".." in path.split("/"):
        raise ValueError(f"{what} {path!r}: must not contain a '..' segment")


def validate(spec: ExecutionSpec) -> None:
    if not spec.steps:
        raise ValueError("an execution needs at least one step")
    names = [step.name for step in spec.steps]
    if any(not name for name in names) or len(set(names)) != len(names):
        raise ValueError("step names must be non-empty and unique")
    if spec.timeout_seconds is not None and spec.timeout_seconds <= 0:
        raise ValueError("timeout_seconds must be positive")
    for name, value in spec.env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"environment variable {name!r}: invalid name or value")
    check_relative_path(spec.working_dir, "working_dir", allow_empty=True)
    files = {str(PurePosixPath(path)): path for path in spec.files}
    for normal, path in files.items():
        check_relative_path(path, "file path")
        if normal in ("", "."):
            raise ValueError(f"file path {path!r}: names no file")
        for parent in PurePosixPath(normal).parents:
            if str(parent) in files:
                raise ValueError(f"file path {path!r}: its parent {str(parent)!r} is a file")


def to_json(spec: ExecutionSpec, *, kill_grace_seconds: float) -> str:
    return json.dumps(
        {
            "steps": [{"name": step.name, "run": step.run} for step in spec.steps],
            "env": dict(spec.env),
            "timeoutSeconds": spec.timeout_seconds,
            "files": dict(spec.files),
            "workingDir": spec.working_dir,
            "masked": list(spec.masked),
            "killGraceSeconds": kill_grace_seconds,
        }
    )


def from_json(text: str) -> tuple[ExecutionSpec, float]:
    """The spec and the kill grace (seconds between SIGTERM and SIGKILL)."""
    data: dict[str, Any] = json.loads(text)
    spec = ExecutionSpec(
        steps=tuple(Step(name=step["name"], run=step["run"]) for step in data["steps"]),
        env=dict(data["env"]),
        timeout_seconds=data["timeoutSeconds"],
        files=dict(data["files"]),
        working_dir=data["workingDir"],
        masked=tuple(data.get("masked") or ()),
    )
    return spec, float(data["killGraceSeconds"])
