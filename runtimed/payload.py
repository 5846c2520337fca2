"""The ``runtimed.execute_run`` payload, parsed into a typed value.

Shape (unknown keys are ignored)::

    {"run": {"namespace", "name", "uid", "attempt"}, "pod": {"name", "uid"},
     "source": {"inline": str} | {"repoURL": str, "commitSHA": str?} | {} | null,
     "mode": {"task": {"entrypoint": str?, "args": [str]}}
           | {"function": {"handler": str, "idleTimeoutSeconds": int?}},
     "env": [{"name", "value"}], "timeoutSeconds": float | null, "workingDir": str | null,
     "artifactStore": Runtime.spec.artifactStore | null,
     "artifactInputs": [{"ref": ArtifactRef, "path": str}],
     "workspace": {"name": str}?}

An empty or null ``source`` is a Run without one (``runtimed.command`` reads its args).
``workspace`` (absent for a Run without one) is validated again here: its name must be a
DNS-1123 subdomain, since it names a directory (``runtimed.persistent``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .persistent import WorkspaceError, check_name

# A Run UID names a directory: keep it to one safe path component.
_UID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class PayloadError(ValueError):
    """The payload is not the shape the control plane promised."""


@dataclass(frozen=True)
class RunRef:
    namespace: str
    name: str
    uid: str
    attempt: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.uid, self.attempt)


@dataclass(frozen=True)
class Source:
    inline: str | None = None
    repo_url: str | None = None
    commit_sha: str | None = None
    inline_path: str | None = None  # function mode: where the inline source is written


@dataclass(frozen=True)
class ArtifactInput:
    ref: Mapping[str, Any]  # an ArtifactRef as the API admitted it
    path: str


@dataclass(frozen=True)
class RunPayload:
    run: RunRef
    pod_name: str
    pod_uid: str
    source: Source
    mode: str  # "task" or "function"
    entrypoint: str | None = None
    args: tuple[str, ...] = ()
    handler: str | None = None  # function mode: module.function, the Runtime Server's notation
    idle_timeout_seconds: int | None = None
    env: tuple[tuple[str, str], ...] = ()
    timeout_seconds: float | None = None
    working_dir: str | None = None
    artifact_store: Mapping[str, Any] | None = None  # Runtime.spec.artifactStore
    artifact_inputs: tuple[ArtifactInput, ...] = ()
    workspace: str | None = None  # the PersistentWorkspace's name
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


def parse_run_ref(payload: Any) -> RunRef:
    """Just the Run's identity: enough to report on, even when the rest is broken."""
    run = _mapping(payload, "payload").get("run")
    run = _mapping(run, "run")
    uid = _string(run, "uid", "run")
    if not _UID.match(uid) or ".." in uid:
        raise PayloadError(f"run.uid {uid!r} is not a valid UID")
    attempt = run.get("attempt")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
        raise PayloadError(f"run.attempt must be a non-negative integer, got {attempt!r}")
    return RunRef(_string(run, "namespace", "run"), _string(run, "name", "run"), uid, attempt)


def parse(payload: Any) -> RunPayload:
    run = parse_run_ref(payload)
    pod = _mapping(payload.get("pod"), "pod")
    mode, entrypoint, args = _mode(payload.get("mode"))
    handler, idle = _function(payload.get("mode")) if mode == "function" else (None, None)
    return RunPayload(
        run=run,
        pod_name=_string(pod, "name", "pod"),
        pod_uid=_string(pod, "uid", "pod"),
        source=_source(payload.get("source")),
        mode=mode,
        entrypoint=entrypoint,
        args=args,
        handler=handler,
        idle_timeout_seconds=idle,
        env=_env(payload.get("env")),
        timeout_seconds=_timeout(payload.get("timeoutSeconds")),
        working_dir=_optional_string(payload, "workingDir", "payload"),
        artifact_store=_optional_mapping(payload.get("artifactStore"), "artifactStore"),
        artifact_inputs=_artifact_inputs(payload.get("artifactInputs")),
        workspace=workspace_name(payload),
        raw=payload,
    )


def workspace_name(payload: Mapping[str, Any]) -> str | None:
    """The name of the workspace the Run uses, or None; a PayloadError if it is not valid."""
    workspace = payload.get("workspace")
    if workspace is None:
        return None
    try:
        return check_name(_mapping(workspace, "workspace").get("name"))
    except WorkspaceError as exc:
        raise PayloadError(f"workspace.name: {exc.message}") from None


def _source(value: Any) -> Source:
    if value is None or value == {}:
        return Source()  # no source: the Runtime reads the args (runtimed.command)
    source = _mapping(value, "source")
    inline = source.get("inline")
    repo_url = source.get("repoURL")
    if (inline is None) == (repo_url in (None, "")):
        raise PayloadError("source needs exactly one of inline or repoURL")
    if inline is not None:
        if not isinstance(inline, str):
            raise PayloadError("source.inline must be a string")
        return Source(inline=inline, inline_path=_optional_string(source, "inlinePath", "source"))
    if not isinstance(repo_url, str):
        raise PayloadError("source.repoURL must be a string")
    commit = _optional_string(source, "commitSHA", "source") or None
    return Source(repo_url=repo_url, commit_sha=commit)


def _mode(value: Any) -> tuple[str, str | None, tuple[str, ...]]:
    mode = _mapping(value, "mode")
    if "task" not in mode:
        if not mode:
            raise PayloadError("mode needs task")
        return sorted(mode)[0], None, ()  # e.g. function: refused when the Run executes
    task = _mapping(mode.get("task") or {}, "mode.task")
    entrypoint = _optional_string(task, "entrypoint", "mode.task") or None
    args = task.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise PayloadError("mode.task.args must be a list of strings")
    return "task", entrypoint, tuple(args)


def _function(value: Any) -> tuple[str, int | None]:
    function = _mapping(_mapping(value, "mode").get("function"), "mode.function")
    handler = _string(function, "handler", "mode.function")
    idle = function.get("idleTimeoutSeconds")
    if idle is not None and (isinstance(idle, bool) or not isinstance(idle, int) or idle < 0):
        raise PayloadError("mode.function.idleTimeoutSeconds must be a non-negative integer")
    return handler, idle or None


def _env(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PayloadError("env must be a list of {name, value}")
    pairs = []
    for index, item in enumerate(value):
        item = _mapping(item, f"env[{index}]")
        name = _string(item, "name", f"env[{index}]")
        if "=" in name or "\0" in name:
            raise PayloadError(f"env[{index}].name {name!r} is not a valid variable name")
        text = item.get("value")
        text = "" if text is None else text
        if not isinstance(text, str) or "\0" in text:
            raise PayloadError(f"env[{index}].value must be a string without NUL")
        pairs.append((name, text))
    return tuple(pairs)


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise PayloadError(f"timeoutSeconds must be a positive number or null, got {value!r}")
    return float(value)


def _artifact_inputs(value: Any) -> tuple[ArtifactInput, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PayloadError("artifactInputs must be a list of {ref, path}")
    inputs = []
    for index, item in enumerate(value):
        item = _mapping(item, f"artifactInputs[{index}]")
        ref = _mapping(item.get("ref"), f"artifactInputs[{index}].ref")
        inputs.append(ArtifactInput(ref, _string(item, "path", f"artifactInputs[{index}]")))
    return tuple(inputs)


def _optional_mapping(value: Any, where: str) -> dict[str, Any] | None:
    return None if value is None else _mapping(value, where)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PayloadError(f"{where} must be an object")
    return value


def _string(mapping: Mapping[str, Any], key: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value:
        raise PayloadError(f"{where}.{key} must be a non-empty string")
    return value


def _optional_string(mapping: Mapping[str, Any], key: str, where: str) -> str | None:
    value = mapping.get(key)
    if value is not None and not isinstance(value, str):
        raise PayloadError(f"{where}.{key} must be a string or null")
    return value
