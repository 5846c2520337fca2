"""The local adapter (``execution.ayatori.ddupan.top/local``, the embedded default): a Job's
steps run as processes on the control-plane worker's machine, one shared working directory and
environment for all of them, under a detached supervisor (``jobclasses.localexec``) that
outlives the worker, so a restarted controller observes the execution it started.

Parameters (``LocalExecutionParameters``): ``workRoot`` (default ``<data dir>/jobs/<name>``)
holds one directory per execution; ``maxConcurrentJobs`` bounds the executions alive at once
(a Job beyond it waits Scheduled=False/WaitingForCapacity: capacity never flips Ready).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from jobclasses import localexec

from .base import ExecutionRequest, NotReadyToStart, Observation, Readiness

CONTROLLER_NAME = "execution.ayatori.ddupan.top/local"
REF_TYPE = "local"


def work_root(parameters_name: str, parameters: Mapping[str, Any]) -> Path:
    root = parameters.get("workRoot")
    return Path(root) if root else Path(settings.DATA_DIR) / "jobs" / parameters_name


def _engine_ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": REF_TYPE, "dir": str(Path(ref["root"]) / ref["id"]), "id": ref["id"]}


def steps_of(spec: Mapping[str, Any]) -> tuple[localexec.Step, ...]:
    """The Job's steps; ``command``/``args`` is one step named ``main``; a ``repoURL`` source
    is checked out by a first step named ``checkout``."""
    import shlex

    steps = [localexec.Step(s["name"], s["run"]) for s in spec.get("steps") or []]
    if not steps and spec.get("command"):
        argv = [*spec["command"], *(spec.get("args") or [])]
        steps = [localexec.Step("main", shlex.join(argv))]
    source = spec.get("source") or {}
    if source.get("repoURL"):
        url, sha = shlex.quote(source["repoURL"]), shlex.quote(source["commitSHA"])
        checkout = (
            f"git init -q . && git fetch -q --depth 1 {url} {sha} && git checkout -q FETCH_HEAD"
        )
        steps.insert(0, localexec.Step("checkout", checkout))
    return tuple(steps)


class LocalAdapter:
    controller_name = CONTROLLER_NAME
    parameter_kinds = ("LocalExecutionParameters",)

    def readiness(self, parameters_name: str, parameters: Mapping[str, Any]) -> Readiness:
        root = work_root(parameters_name, parameters)
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            return Readiness(False, "BackendUnreachable", f"cannot create workRoot {root}: {exc}")
        if not os.access(root, os.W_OK | os.X_OK):
            return Readiness(False, "BackendUnreachable", f"workRoot {root} is not writable")
        return Readiness(True, "BackendReachable", f"Jobs run on this machine under {root}")

    def plan(self, request: ExecutionRequest) -> dict[str, Any]:
        root = work_root(request.parameters_name, request.parameters)
        limit = int(request.parameters.get("maxConcurrentJobs") or 4)
        running = localexec.running_count(root)
        if running >= limit:
            raise NotReadyToStart(
                "WaitingForCapacity",
                f"{running} of maxConcurrentJobs {limit} local executions are running",
            )
        return {"type": REF_TYPE, "root": str(root), "id": request.uid}

    def ensure(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        spec = request.spec
        source = spec.get("source") or {}
        localexec.start(
            Path(ref["root"]),
            ref["id"],
            localexec.ExecutionSpec(
                steps=steps_of(spec),
                env=dict(request.env),
                timeout_seconds=spec.get("timeoutSeconds"),
                files=dict(source.get("inline") or {}),
                working_dir=spec.get("workingDir") or "",
                masked=tuple(request.masked),
            ),
        )

    def resume(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        """Never detached: nothing to resume."""

    def observe(self, ref: Mapping[str, Any]) -> Observation:
        seen = localexec.observe(_engine_ref(ref))
        return Observation.of(seen, exists=Path(_engine_ref(ref)["dir"]).exists())

    def cancel(self, ref: Mapping[str, Any]) -> None:
        localexec.cancel(_engine_ref(ref))

    def delete(self, ref: Mapping[str, Any]) -> None:
        localexec.delete(_engine_ref(ref))

    def log(self, ref: Mapping[str, Any], limit_bytes: int | None = None) -> str:
        return localexec.read_log(_engine_ref(ref), limit_bytes=limit_bytes)
