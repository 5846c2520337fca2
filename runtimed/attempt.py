"""One attempt of a Run, from a claimed slot to its outcome: prepare, execute, collect.

Prepare stages the source and the artifact inputs and checks that the pod's Runtime Server can
run the step (``runtime_host``; for bash a Run without source runs its args or a file of its
workspace, ``command``) (failures: PrepareSource); the step runs, through that server,
with ``KRUNTIME_OUTPUTS`` and ``KRUNTIME_ARTIFACTS_DIR`` pointing into the attempt's own
directory; after a successful step the outputs are parsed (OutputsInvalid, OutputsTooLarge)
and the artifacts packed (ArtifactInvalid) and uploaded to the Runtime's ArtifactStore.

The step's current directory (and ``KRUNTIME_WORKSPACE``) is the Run's root: its
PersistentWorkspace's directory when it names one (shared with the other Runs using it), else
the pod's workspace; a relative ``workingDir`` is resolved below that root.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from . import execute, masking, persistent, runtime_host
from .artifacts import ArtifactError, Packed, collect
from .config import PodConfig
from .execute import FAILED, SUCCEEDED, Clock, Result, Step, StepControl
from .inputs import StagingError, stage_input
from .outputs import OutputsError, parse_outputs
from .payload import RunPayload, RunRef
from .protocol import Reason
from .refs import ArtifactRef
from .reporting import rfc3339
from .staging import GIT_TIMEOUT_SECONDS, PrepareError, stage
from .stores import ArtifactStore, RunScope, StoreError, build_store

log = logging.getLogger("runtimed.attempt")

MAX_ARTIFACTS = 32


class StoreFactory(Protocol):
    """Builds the store a Runtime's ``spec.artifactStore`` names (``stores.build_store``)."""

    def __call__(
        self, spec: Mapping[str, Any], *, volumes_root: Path | None, secrets_dir: Path | None
    ) -> ArtifactStore: ...


@dataclass(frozen=True)
class AttemptFiles:
    """Where one attempt keeps its files, inside the Run's directory."""

    run_dir: Path
    attempt: int

    @property
    def root(self) -> Path:
        return self.run_dir / f"attempt-{self.attempt}"

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def log(self) -> Path:
        return self.run_dir / f"attempt-{self.attempt}.log"

    def create(self) -> None:
        if self.root.exists():  # a leftover of this attempt (never executed): start clean
            shutil.rmtree(self.root)
        for path in (self.root, self.artifacts, self.scratch):
            path.mkdir(parents=True, exist_ok=True)
        self.outputs.touch()


@dataclass(frozen=True)
class Outcome:
    result: Result
    outputs: dict[str, str] = field(default_factory=dict)
    artifact_refs: list[ArtifactRef] = field(default_factory=list)


class Failure(Exception):
    """Ends the attempt as Failed with ``reason``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class Attempt:
    """Executes one claimed attempt; never raises for anything the Run did."""

    def __init__(
        self,
        config: PodConfig,
        ref: RunRef,
        spec: RunPayload,
        run_dir: Path,
        *,
        clock: Clock,
        control: StepControl,
        on_output: Callable[[bytes], object] | None,
        grace: float = execute.KILL_GRACE_SECONDS,
        git_timeout: float = GIT_TIMEOUT_SECONDS,
        store_factory: StoreFactory = build_store,
    ) -> None:
        self.config, self.ref, self.spec = config, ref, spec
        self.files = AttemptFiles(run_dir, ref.attempt)
        self.base = self.run_root(config, spec)
        self.clock, self.control, self.on_output = clock, control, on_output
        self.grace, self.git_timeout = grace, git_timeout
        self.store_factory = store_factory
        self._store: ArtifactStore | None = None
        # what reaches a Run from a Secret: the files of the Secrets mounted on its pod
        self.masked = tuple(masking.secret_files(config.secrets_dir))

    def run(self, start: datetime) -> Outcome:
        try:
            cwd, program = self._prepare()
        except Failure as failure:
            return Outcome(
                Result(FAILED, failure.reason, failure.message, None, start, self.clock())
            )
        result = self._execute(cwd, *program)
        if result.phase != SUCCEEDED:
            return Outcome(result)
        try:
            outputs = self._masked_outputs(parse_outputs(self.files.outputs))
            refs = self._upload(self._pack())
        except OutputsError as exc:
            return Outcome(self._failed(result, exc.reason, exc.message))
        except Failure as failure:
            return Outcome(self._failed(result, failure.reason, failure.message))
        return Outcome(result, outputs, refs)

    def _masked_outputs(self, outputs: dict[str, str]) -> dict[str, str]:
        """The outputs with every secret value masked; the file on disk is masked too."""
        if not self.masked:
            return outputs
        masked = {key: masking.mask_text(value, self.masked) for key, value in outputs.items()}
        if masked != outputs:
            masking.mask_file(self.files.outputs, self.masked)
        return masked

    @staticmethod
    def run_root(config: PodConfig, spec: RunPayload) -> Path:
        """Where the step runs: its persistent workspace, or the pod's workspace."""
        if spec.workspace is None:
            return config.workspace
        return persistent.path(config.workspace, spec.workspace)

    # --- prepare ---------------------------------------------------------------------------

    def _prepare(self) -> tuple[Path, tuple[str, tuple[str, ...]]]:
        """The step's cwd, and what the Runtime Server gets: its entrypoint and args."""
        spec = self.spec
        try:
            if spec.mode != "task":
                raise PrepareError(f"mode {spec.mode!r} is not supported by this runtimed")
            self.files.create()
            staged = stage(
                spec.source, spec.entrypoint, self.files.run_dir, git_timeout=self.git_timeout
            )
            cwd = execute.working_directory(self.base, spec.working_dir)
        except PrepareError as exc:
            raise Failure(Reason.PREPARE_SOURCE, exc.message) from None
        except OSError as exc:
            raise Failure(
                Reason.PREPARE_SOURCE, f"cannot prepare the attempt directory: {exc}"
            ) from None
        for index, item in enumerate(spec.artifact_inputs):
            self._stage_input(index, item.ref, item.path, cwd)
        entrypoint = str(staged.script) if staged.script is not None else spec.entrypoint or ""
        try:  # after the inputs: one of them may be the script
            self.host.validate(cwd, entrypoint, spec.args)
            return cwd, (entrypoint, spec.args)
        except PrepareError as exc:
            raise Failure(Reason.PREPARE_SOURCE, exc.message) from None

    def _stage_input(self, index: int, ref: Mapping[str, Any], path: str, cwd: Path) -> None:
        where = f"artifactInputs[{index}] ({ref.get('name', '?')} → {path})"
        try:
            store = self._artifact_store("read artifact inputs")
            with store.open(ref) as stream:
                stage_input(stream, ref, cwd, path, spool_dir=self.files.scratch)
        except StagingError as exc:
            raise Failure(Reason.PREPARE_SOURCE, f"{where}: {exc.message}") from None
        except StoreError as exc:
            raise Failure(Reason.PREPARE_SOURCE, f"{where}: {exc}") from None

    def _artifact_store(self, purpose: str) -> ArtifactStore:
        if self._store is None:
            if not self.spec.artifact_store:
                raise StoreError(f"the Runtime has no artifactStore to {purpose}")
            self._store = self.store_factory(
                self.spec.artifact_store,
                volumes_root=self.config.artifact_volumes,
                secrets_dir=self.config.secrets_dir,
            )
        return self._store

    # --- execute ---------------------------------------------------------------------------

    @property
    def host(self) -> runtime_host.RuntimeHost:
        return runtime_host.for_config(self.config)

    def _execute(self, cwd: Path, entrypoint: str, args: tuple[str, ...]) -> Result:
        env = execute.step_env(
            self.spec.env,
            {
                **execute.identity_env(
                    run_name=self.ref.name,
                    run_namespace=self.ref.namespace,
                    run_uid=self.ref.uid,
                    attempt=self.ref.attempt,
                    pod_name=self.config.pod_name,
                    pod_uid=self.config.pod_uid,
                    workspace=self.base,
                    run_dir=self.files.run_dir,
                ),
                "KRUNTIME_OUTPUTS": str(self.files.outputs),
                "KRUNTIME_ARTIFACTS_DIR": str(self.files.artifacts),
            },
        )
        step = Step(
            ("runtime-server", entrypoint, *args),  # for the record: the server decides argv
            cwd,
            env,
            self.files.log,
            self.spec.timeout_seconds,
            on_output=self.on_output,
            control=self.control,
            masked=self.masked,
        )
        return self.host.run(step, entrypoint, args, clock=self.clock, grace=self.grace)

    # --- collect ---------------------------------------------------------------------------

    def _pack(self) -> list[Packed]:
        try:
            return collect(
                self.files.artifacts,
                self.files.scratch,
                max_artifact_bytes=self.config.max_artifact_bytes,
                max_run_bytes=self.config.max_run_artifact_bytes,
                max_count=MAX_ARTIFACTS,
            )
        except ArtifactError as exc:
            raise Failure(Reason.ARTIFACT_INVALID, exc.message) from None

    def _upload(self, packed: list[Packed]) -> list[ArtifactRef]:
        if not packed:
            return []
        scope = RunScope(self.ref.namespace, self.ref.uid)
        try:
            store = self._artifact_store("upload artifacts to")
        except StoreError as exc:
            names = ", ".join(p.name for p in packed)
            raise Failure(
                Reason.ARTIFACT_INVALID, f"the step left artifacts ({names}) but {exc}"
            ) from None
        refs: list[ArtifactRef] = []
        try:
            for item in packed:
                refs.append(self._put(store, scope, item))
        except (StoreError, OSError) as exc:
            self._delete_uploaded(store, scope, refs)
            raise Failure(
                Reason.RUNTIME_ERROR, f"uploading artifact {item.name!r} failed: {exc}"
            ) from None
        return refs

    def _put(self, store: ArtifactStore, scope: RunScope, item: Packed) -> ArtifactRef:
        with open(item.path, "rb") as source:
            location = store.put(scope, item.name, source, item.size, item.content_type)
        return {
            "name": item.name,
            "driver": store.driver,
            "type": item.type,
            "location": location,
            "sizeBytes": item.size,
            "digest": item.digest,
            "contentType": item.content_type,
            "createdAt": rfc3339(self.clock()),
        }

    @staticmethod
    def _delete_uploaded(store: ArtifactStore, scope: RunScope, refs: list[ArtifactRef]) -> None:
        for ref in refs:
            try:
                store.delete(scope, ref["name"])
            except StoreError:
                log.warning(
                    "could not delete partial upload %s of Run %s",
                    ref["name"],
                    scope.run_uid,
                    exc_info=True,
                )

    def _failed(self, result: Result, reason: str, message: str) -> Result:
        return Result(FAILED, reason, message, result.exit_code, result.start, self.clock())
