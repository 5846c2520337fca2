"""The objects krt writes, built from its flags: a task Run, a function Run, a WorkflowRun
of a Workflow or of a rerun. Shapes as API.md (``kruntimes.io/v1alpha1``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import KrtError
from .resources import RUNS, WORKFLOW_RUNS

DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def key_values(pairs: Sequence[str], flag: str) -> dict[str, str]:
    """``K=V`` flags as a dict (later wins); ``V`` may hold ``=``; an empty key is refused."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise KrtError(f'{flag} "{pair}": expected KEY=VALUE')
        values[key] = value
    return values


def env_list(pairs: Sequence[str]) -> list[dict[str, str]]:
    values = key_values(pairs, "--env")
    for name in values:
        if not ENV_NAME.match(name):
            raise KrtError(f'--env "{name}": not a valid environment variable name')
    return [{"name": k, "value": v} for k, v in values.items()]


def check_duration(value: str) -> str:
    if not DURATION.match(value):
        raise KrtError(f'--timeout "{value}": expected a duration such as 30s, 5m or 1h30m')
    return value


def metadata(name: str | None, generate_from: str, namespace: str) -> dict[str, str]:
    """A given name, or ``generateName`` (the server appends a random suffix)."""
    if name:
        return {"name": name, "namespace": namespace}
    return {"generateName": f"{generate_from[:50].rstrip('-.')}-", "namespace": namespace}


def task_run(
    *,
    namespace: str,
    runtime: str,
    name: str | None = None,
    args: Sequence[str] = (),
    file: str | None = None,
    env: Sequence[str] = (),
    workspace: str | None = None,
    timeout: str | None = None,
) -> dict[str, Any]:
    """A task Run: ``--file`` text as ``source.inline`` (args still passed), or the command
    words as ``mode.task.args`` with no source (the Runtime interprets them)."""
    if not file and not args:
        raise KrtError("nothing to run: give --file FILE or -- COMMAND [ARG...]")
    spec: dict[str, Any] = {"runtime": runtime, "mode": {"task": {}}}
    if file:
        spec["source"] = {"inline": read_text(file)}
    if args:
        spec["mode"]["task"]["args"] = list(args)
    if env:
        spec["env"] = env_list(env)
    if workspace:
        spec["workspace"] = {"name": workspace}
    if timeout:
        spec["timeout"] = check_duration(timeout)
    return {
        "apiVersion": RUNS.api_version,
        "kind": RUNS.kind,
        "metadata": metadata(name, runtime, namespace),
        "spec": spec,
    }


def function_run(
    *,
    namespace: str,
    runtime: str,
    source: str,
    handler: str,
    inline_path: str,
    idle_timeout_seconds: int | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    function: dict[str, Any] = {"handler": handler}
    if idle_timeout_seconds is not None:
        function["idleTimeoutSeconds"] = int(idle_timeout_seconds)
    return {
        "apiVersion": RUNS.api_version,
        "kind": RUNS.kind,
        "metadata": metadata(name, f"{runtime}-fn", namespace),
        "spec": {
            "runtime": runtime,
            "source": {"inline": source, "inlinePath": inline_path},
            "mode": {"function": function},
        },
    }


def workflow_run(
    namespace: str, spec: dict[str, Any], *, name: str | None = None, generate_from: str = "wfr"
) -> dict[str, Any]:
    return {
        "apiVersion": WORKFLOW_RUNS.api_version,
        "kind": WORKFLOW_RUNS.kind,
        "metadata": metadata(name, generate_from, namespace),
        "spec": spec,
    }


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise KrtError(f"{path}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
