"""One attempt of a function-mode Run: its working directory, its registration, its serving.

The same identity variables reach the function as a task's step (``KRUNTIME_RUN_UID``, ...);
there are no outputs file and no artifacts directory: an invocation's results are its answer
(kruntimes' contract keeps invocation artifacts out of scope).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from . import execute, function_source, runtime_host
from .attempt import Attempt, AttemptFiles
from .config import PodConfig
from .execute import FAILED, Clock, Result, StepControl
from .functions import FunctionTable, Registration, Serve
from .payload import RunPayload, RunRef
from .protocol import Reason
from .staging import GIT_TIMEOUT_SECONDS, PrepareError


def serve_function(
    config: PodConfig,
    ref: RunRef,
    spec: RunPayload,
    run_dir: Path,
    start: datetime,
    *,
    table: FunctionTable,
    control: StepControl,
    clock: Clock,
    on_ready: Callable[[], object],
    git_timeout: float = GIT_TIMEOUT_SECONDS,
) -> Result:
    """Prepare, register and serve until the function must end; never raises for what the Run
    did (a refused source or handler is PrepareSource)."""
    files = AttemptFiles(run_dir, ref.attempt)
    base = Attempt.run_root(config, spec)
    try:
        if not spec.handler:
            raise PrepareError("mode.function.handler is required")
        files.create()
        working = function_source.prepare(spec.source, files.root, base, git_timeout=git_timeout)
    except PrepareError as exc:
        return Result(FAILED, Reason.PREPARE_SOURCE, exc.message, None, start, clock())
    except OSError as exc:
        return Result(
            FAILED,
            Reason.PREPARE_SOURCE,
            f"cannot prepare the function's directory: {exc}",
            None,
            start,
            clock(),
        )
    env = execute.step_env(
        spec.env,
        execute.identity_env(
            run_name=ref.name,
            run_namespace=ref.namespace,
            run_uid=ref.uid,
            attempt=ref.attempt,
            pod_name=config.pod_name,
            pod_uid=config.pod_uid,
            workspace=base,
            run_dir=files.run_dir,
        ),
    )
    registration = Registration(
        uid=ref.uid,
        attempt=ref.attempt,
        working_dir=str(working),
        handler=spec.handler,
        env=env,
        idle_timeout_seconds=spec.idle_timeout_seconds,
        digest=function_source.digest(
            spec.source, spec.handler, dict(spec.env), spec.idle_timeout_seconds
        ),
        timeout_seconds=spec.timeout_seconds,
    )
    stub = runtime_host.for_config(config).function_stub()
    return Serve(registration, stub, table, control, clock, on_ready).run(start)
