"""The OpenSandbox adapter (``execution.ayatori.ddupan.top/opensandbox``, seed 003's
OpenSandboxExecutionParameters) through the ``opensandbox`` SDK (``opensandbox_api``).

One sandbox per Job, created from the Job's ``image`` with a long-lived entrypoint, the Job's
env (one environment shared by every step), ``resourceLimits`` from the effective limits
(``requestMapping: Native`` also sends the requests), ``extensions.poolRef`` from the
parameters' ``poolRef``, and the Job's UID as metadata. Inside it (``SANDBOX_ROOT``): the
checkout in ``work/`` (inline files written through execd's file API), ``outputs/`` (the
steps see it as ``$KRUNTIME_OUTPUTS_DIR``; collected when the Job ends), and ``.steps/`` with
each step's script and what it left: ``log``, ``started``, ``finished``, ``exit``.

Each step is one background execd command; each observe starts the next step once the one
before has its exit code. A step's command first claims ``.steps/<i>`` with ``mkdir``, so a
step runs at most once whatever happens to the controller (a restarted or concurrent
controller starting it again finds the claim and does nothing). A restarted controller finds
its sandbox by the recorded id, or by the Job-UID metadata when the recorded state is lost,
and never creates a second one.

Kept on the control-plane worker under ``<DATA_DIR>/opensandbox/<job uid>``: ``state.json``
(the sandbox id, the deadline), ``log`` (every step's output, ``==> step`` headers as the local
adapter writes them), ``result.json`` (the local adapter's shape), ``outputs/``. The sandbox is
deleted when the Job ends (succeeded, failed, cancelled, timed out) and when it is deleted.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import shlex
import shutil
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from jobclasses.env import secret_values, uses_secrets
from jobclasses.localexec import result as results
from jobclasses.localexec.layout import read_text, write_atomic
from jobclasses.localexec.spec import check_relative_path
from portal.secrets import MissingReference, secret_value
from runtimed.masking import mask_file, mask_text

from . import opensandbox_api as api
from .base import BackendError, ExecutionRequest, NotReadyToStart, Observation, Readiness
from .local import steps_of

CONTROLLER_NAME = "execution.ayatori.ddupan.top/opensandbox"
REF_TYPE = "opensandbox"
PARAMETERS_KIND = "OpenSandboxExecutionParameters"
SANDBOX_ROOT = "/kruntimes"
ENTRYPOINT = ["tail", "-f", "/dev/null"]
# the sandbox's own lifetime beyond timeoutSeconds (the server removes a forgotten one)
LIFETIME_MARGIN_SECONDS = 600
MAX_OUTPUT_FILES = 256

# Ready=False reasons
API_KEY_NOT_FOUND = "APIKeyNotFound"
API_KEY_REJECTED = "APIKeyRejected"
BACKEND_UNREACHABLE = "BackendUnreachable"
# Accepted=False reasons (the admit hook)
SECRET_ENV_NOT_ALLOWED = "SecretEnvNotAllowed"
IMAGE_AUTH_NOT_ALLOWED = "ImageAuthNotAllowed"
IMAGE_REQUIRED = "ImageRequired"
# Scheduled=False reasons
IMAGE_PULL_SECRET_NOT_FOUND = "ImagePullSecretNotFound"


def work_root() -> Path:
    return Path(settings.DATA_DIR) / "opensandbox"


def _quantity(value: Any) -> str:
    return str(value)


def resource_mapping(
    effective: Mapping[str, Any], request_mapping: str
) -> tuple[dict[str, str], dict[str, str] | None]:
    """(resourceLimits, resourceRequests or None). The limits are the effective limits, a
    resource without a limit taking its request (the sandbox never gets less than the Job was
    admitted with); ``Native`` also sends the requests, ``AdmissionOnly`` keeps them to the
    portal's admission."""
    requests = {k: _quantity(v) for k, v in (effective.get("requests") or {}).items()}
    limits = {k: _quantity(v) for k, v in (effective.get("limits") or {}).items()}
    for name, value in requests.items():
        limits.setdefault(name, value)
    return limits, (requests or None) if request_mapping == "Native" else None


def _registry(image: str) -> str:
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def image_credentials(
    namespace: str, image: str, pull_secrets: list[Any]
) -> tuple[str, str] | None:
    """(username, password) for the image's registry from the Job's imagePullSecrets
    (``.dockerconfigjson``), the first that has an entry for it; None when none does."""
    registry = _registry(image)
    hosts = {registry}
    if registry == "docker.io":
        hosts |= {"index.docker.io", "https://index.docker.io/v1/", "registry-1.docker.io"}
    for ref in pull_secrets:
        name = ref.get("name", "")
        try:
            raw = secret_value(namespace, name, ".dockerconfigjson")
        except MissingReference as exc:
            raise NotReadyToStart(IMAGE_PULL_SECRET_NOT_FOUND, f"imagePullSecrets: {exc}") from None
        try:
            auths = json.loads(raw).get("auths") or {}
        except (ValueError, AttributeError):
            auths = {}
        for host, entry in auths.items():
            bare = host.removeprefix("https://").removeprefix("http://").split("/", 1)[0]
            if host not in hosts and bare not in hosts or not isinstance(entry, dict):
                continue
            if entry.get("username") and entry.get("password"):
                return str(entry["username"]), str(entry["password"])
            if entry.get("auth"):
                user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
                return user, password
    return None


# --- the step commands ---------------------------------------------------------------------


def _step_dir(index: int) -> str:
    return f".steps/{index}"


def step_command(index: int, working_dir: str) -> str:
    """The execd command of step ``index`` (run in SANDBOX_ROOT): claim, run, record."""
    step = _step_dir(index)
    work = shlex.quote(f"work/{working_dir}" if working_dir else "work")
    now = "date -u +%Y-%m-%dT%H:%M:%SZ"
    return (
        f"mkdir {step} 2>/dev/null || exit 0; "  # claimed before: it ran, or runs, once
        'R="$PWD"; export KRUNTIME_OUTPUTS_DIR="$R/outputs"; '
        f'mkdir -p "$R/outputs" "$R/"{work}; '
        f"{now} > {step}/started; "
        f'(cd "$R/"{work} && exec /bin/sh -e "$R/{step}.sh") > {step}/log 2>&1; '
        f"code=$?; {now} > {step}/finished; "
        f'(cd "$R/outputs" && find . -type f | head -n {MAX_OUTPUT_FILES}) > {step}/outputs; '
        f"echo $code > {step}/exit.tmp && mv {step}/exit.tmp {step}/exit"
    )


def _sandbox_path(relative: str) -> str:
    return f"{SANDBOX_ROOT}/{relative}"


# --- the execution's local record ------------------------------------------------------------


class Record:
    """``<work root>/<job uid>``: state.json, log, result.json, outputs/, cancel."""

    def __init__(self, ref: Mapping[str, Any]) -> None:
        if ref.get("type") != REF_TYPE or not ref.get("id") or "/" in str(ref["id"]):
            raise BackendError(f"not an OpenSandbox executionRef: {dict(ref)!r}")
        self.ref = ref
        self.path = Path(ref["root"]) / str(ref["id"])

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path / "lock", "a+") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            yield

    def state(self) -> dict[str, Any]:
        """What the ref fixed at plan (steps, workingDir, timeoutSeconds, startTime) with what
        was recorded since (sandboxId, prepared): all of it can be found again when lost."""
        text = read_text(self.path / "state.json")
        planned = {key: self.ref.get(key) for key in ("steps", "workingDir", "timeoutSeconds")}
        planned["startTime"] = self.ref.get("startTime")
        return {**planned, **(json.loads(text) if text else {})}

    def save(self, state: dict[str, Any]) -> None:
        write_atomic(self.path / "state.json", json.dumps(state), mode=0o600)

    def result(self) -> dict[str, Any] | None:
        return results.parse(read_text(self.path / "result.json"))

    def save_result(self, data: dict[str, Any]) -> None:
        write_atomic(self.path / "result.json", json.dumps(data))

    def mask_values(self) -> list[str]:
        """The values of the Secrets the env references: the state keeps the references,
        never the values, which are read again here."""
        secret_env = self.state().get("secretEnv") or {}
        if not secret_env.get("env"):
            return []
        return secret_values(secret_env["namespace"], secret_env["env"])

    def mask(self, text: str) -> str:
        """``text`` with the Secret values masked."""
        return mask_text(text, self.mask_values())

    def say(self, text: str) -> None:
        with open(self.path / "log", "a", encoding="utf-8") as handle:
            handle.write(text)

    @property
    def cancel_marker(self) -> Path:
        return self.path / "cancel"


def _parameters(ref: Mapping[str, Any]) -> Mapping[str, Any]:
    """The parameters as they are now (a rotated key, a moved endpoint), else as planned."""
    from jobclasses import parameters

    found = parameters.lookup(
        {
            "group": "execution.ayatori.ddupan.top",
            "kind": PARAMETERS_KIND,
            "name": ref["parameters"],
        }
    )
    if found is not None:
        return found.spec or {}
    return {"endpoint": ref["endpoint"], "apiKeySecretRef": ref["apiKeySecretRef"]}


def _connection(ref: Mapping[str, Any]) -> api.Connection:
    try:
        return api.connection(_parameters(ref))
    except api.APIKeyMissing as exc:
        raise BackendError(str(exc)) from None


def _now() -> str:
    return results.now()


class OpenSandboxAdapter:
    controller_name = CONTROLLER_NAME
    parameter_kinds = (PARAMETERS_KIND,)

    # --- the class ---------------------------------------------------------------------------

    def readiness(self, parameters_name: str, parameters: Mapping[str, Any]) -> Readiness:
        try:
            conn = api.connection(parameters)
        except api.APIKeyMissing as exc:
            return Readiness(False, API_KEY_NOT_FOUND, str(exc))
        try:
            api.health(conn)
            api.check_key(conn)
        except api.Unauthorized as exc:
            return Readiness(False, API_KEY_REJECTED, str(exc))
        except BackendError as exc:
            return Readiness(False, BACKEND_UNREACHABLE, str(exc))
        return Readiness(True, "BackendReachable", f"OpenSandbox at {conn.endpoint} is healthy")

    def admit(
        self, spec: Mapping[str, Any], parameters: Mapping[str, Any]
    ) -> tuple[str, str] | None:
        """Why a Job cannot use these parameters (Accepted=False), or None."""
        if not spec.get("image"):
            return IMAGE_REQUIRED, "an OpenSandbox Job needs spec.image: its sandbox's image"
        if uses_secrets(spec.get("env")) and not parameters.get("allowSecretEnv"):
            return (
                SECRET_ENV_NOT_ALLOWED,
                "env takes values from Secrets, which this class's OpenSandbox parameters do "
                "not allow (allowSecretEnv: false): the values would be sent to OpenSandbox",
            )
        if spec.get("imagePullSecrets") and not parameters.get("allowImageAuth"):
            return (
                IMAGE_AUTH_NOT_ALLOWED,
                "imagePullSecrets are set, which this class's OpenSandbox parameters do not "
                "allow (allowImageAuth: false): the credentials would be sent to OpenSandbox",
            )
        return None

    # --- the execution -----------------------------------------------------------------------

    def plan(self, request: ExecutionRequest) -> dict[str, Any]:
        spec = request.spec
        return {
            "type": REF_TYPE,
            "root": str(work_root()),
            "id": request.uid,
            "steps": [step.name for step in steps_of(spec)],
            "workingDir": spec.get("workingDir") or "",
            "timeoutSeconds": spec.get("timeoutSeconds"),
            "startTime": _now(),  # the timeout counts from here
            "parameters": request.parameters_name,
            "endpoint": request.parameters.get("endpoint", ""),
            "apiKeySecretRef": dict(request.parameters.get("apiKeySecretRef") or {}),
        }

    def ensure(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        record = Record(ref)
        spec = request.spec
        with record.locked():
            state = record.state()
            if state.get("prepared"):
                return
            try:
                conn = api.connection(request.parameters)
            except api.APIKeyMissing as exc:
                raise NotReadyToStart(API_KEY_NOT_FOUND, str(exc)) from None
            steps = steps_of(spec)
            sandbox_id = state.get("sandboxId") or api.find(conn, request.uid)
            if not sandbox_id:
                sandbox_id = api.create(conn, self._sandbox_request(request))
            state["sandboxId"] = sandbox_id
            state["secretEnv"] = {
                "namespace": request.namespace,
                "env": [
                    var
                    for var in spec.get("env") or ()
                    if "secretKeyRef" in (var.get("valueFrom") or {})
                ],
            }
            record.save(state)
            with api.Sandbox(conn, sandbox_id) as sandbox:
                if _sandbox_path(".steps/prepared") not in sandbox.files(_sandbox_path(".steps")):
                    files: dict[str, str | bytes] = {
                        _sandbox_path(f"{_step_dir(i)}.sh"): step.run
                        for i, step in enumerate(steps)
                    }
                    inline = (spec.get("source") or {}).get("inline") or {}
                    files.update({_sandbox_path(f"work/{p}"): c for p, c in inline.items()})
                    sandbox.write(files)
                    sandbox.write({_sandbox_path(".steps/prepared"): _now()})
            state["prepared"] = True
            record.save(state)

    def _sandbox_request(self, request: ExecutionRequest) -> api.SandboxRequest:
        params = request.parameters
        spec = request.spec
        limits, requests = resource_mapping(
            request.effective_resources, params.get("requestMapping") or "AdmissionOnly"
        )
        auth = None
        if spec.get("imagePullSecrets"):
            auth = image_credentials(request.namespace, spec["image"], spec["imagePullSecrets"])
        timeout = spec.get("timeoutSeconds")
        return api.SandboxRequest(
            image=spec["image"],
            entrypoint=list(ENTRYPOINT),
            env=dict(request.env),
            resource_limits=limits,
            resource_requests=requests,
            extensions={"poolRef": params["poolRef"]} if params.get("poolRef") else {},
            metadata={api.JOB_UID_METADATA: request.uid},
            image_auth=auth,
            timeout_seconds=int(timeout) + LIFETIME_MARGIN_SECONDS if timeout else None,
        )

    def resume(self, ref: Mapping[str, Any], request: ExecutionRequest) -> None:
        """Never detached: nothing to resume."""

    def observe(self, ref: Mapping[str, Any]) -> Observation:
        record = Record(ref)  # a lost record is rebuilt from the ref and the sandbox
        with record.locked():
            done = record.result()
            if done is None or done["phase"] not in results.FINAL_PHASES:
                done = self._advance(record)
        seen = results.Observation.from_result(done)
        return Observation.of(seen)

    def _advance(self, record: Record) -> dict[str, Any]:
        """Move the execution on by what its sandbox shows: record finished steps, start the
        next one, stop it at cancel or timeout, finish it (outputs, delete)."""
        state = record.state()
        previous = record.result()
        steps = previous["steps"] if previous else [results.new_step(n) for n in state["steps"]]
        data = {
            "phase": results.RUNNING,
            "message": "",
            "startTime": state.get("startTime"),
            "completionTime": None,
            "steps": steps,
        }
        conn = _connection(record.ref)
        sandbox_id = state.get("sandboxId") or api.find(conn, str(record.ref["id"]))
        if not sandbox_id:
            data.update(phase=results.UNKNOWN, message="no sandbox is recorded or found for it")
            return data
        if not state.get("sandboxId"):
            record.save({**state, "sandboxId": sandbox_id})
        stop = self._stop_reason(record, state)
        try:
            with api.Sandbox(conn, sandbox_id) as sandbox:
                outcome = stop or self._step_on(sandbox, record, state, data)
                if outcome is not None:
                    self._finish(sandbox, record, steps, outcome)
        except api.SandboxGone:
            data.update(phase=results.UNKNOWN, message=f"sandbox {sandbox_id} is gone")
            return data
        if outcome is None:
            record.save_result(data)
            return data
        phase, message = outcome
        data.update(phase=phase, message=message, completionTime=_now())
        record.save_result(data)  # final before the delete: a failed delete never re-runs this
        api.kill(conn, sandbox_id)
        return data

    def _stop_reason(self, record: Record, state: dict[str, Any]) -> tuple[str, str] | None:
        if record.cancel_marker.exists():
            return results.CANCELLED, (read_text(record.cancel_marker) or "cancelled").strip()
        timeout = state.get("timeoutSeconds")
        if timeout and state.get("startTime"):
            started = datetime.strptime(state["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=UTC
            )
            if datetime.now(UTC) >= started + timedelta(seconds=int(timeout)):
                return results.TIMED_OUT, f"the execution exceeded its {timeout}s timeout"
        return None

    def _step_on(
        self, sandbox: api.Sandbox, record: Record, state: dict[str, Any], data: dict[str, Any]
    ) -> tuple[str, str] | None:
        """Record the steps that ended, start the next: the final (phase, message) or None.
        The record is saved after each change, so a failure halfway repeats nothing."""
        steps = data["steps"]
        for index, step in enumerate(steps):
            if step["status"] in (results.SUCCEEDED, results.FAILED):
                continue
            if not self._collect(sandbox, record, index, step):
                if step["status"] == results.PENDING:
                    sandbox.start(step_command(index, state.get("workingDir", "")), SANDBOX_ROOT)
                    step.update(status=results.RUNNING, startedAt=_now())
                    record.save_result(data)
                return None
            record.save_result(data)
            if step["status"] == results.FAILED:
                message = f"step {step['name']} failed with exit code {step['exitCode']}"
                record.say(f"==> {message}\n")
                return results.FAILED, message
        return results.SUCCEEDED, f"all {len(steps)} steps succeeded"

    def _collect(
        self, sandbox: api.Sandbox, record: Record, index: int, step: dict[str, Any]
    ) -> bool:
        """Whether step ``index`` has ended (its exit code, times and log recorded)."""
        exit_path = _sandbox_path(f"{_step_dir(index)}/exit")
        if exit_path not in self._present(sandbox, index):
            return False
        exit_text = sandbox.read(exit_path)
        if exit_text is None:
            return False
        code = int(exit_text.decode().strip() or "1")
        step.update(
            status=results.SUCCEEDED if code == 0 else results.FAILED,
            exitCode=code,
            startedAt=self._read_text(sandbox, index, "started") or step.get("startedAt"),
            finishedAt=self._read_text(sandbox, index, "finished") or _now(),
        )
        log = sandbox.read(_sandbox_path(f"{_step_dir(index)}/log")) or b""
        record.say(
            f"==> step {step['name']}\n" + record.mask(log.decode("utf-8", errors="replace"))
        )
        return True

    def _present(self, sandbox: api.Sandbox, index: int) -> set[str]:
        """The files step ``index`` left (one listing: reading absent files is noise)."""
        return sandbox.files(_sandbox_path(_step_dir(index)))

    def _read_text(self, sandbox: api.Sandbox, index: int, name: str) -> str | None:
        raw = sandbox.read(_sandbox_path(f"{_step_dir(index)}/{name}"))
        return raw.decode().strip() if raw else None

    def _finish(
        self,
        sandbox: api.Sandbox,
        record: Record,
        steps: list[dict[str, Any]],
        outcome: tuple[str, str],
    ) -> None:
        phase, message = outcome
        for index, step in enumerate(steps):
            if step["status"] == results.RUNNING:
                log = sandbox.read(_sandbox_path(f"{_step_dir(index)}/log")) or b""
                record.say(
                    f"==> step {step['name']}\n"
                    + record.mask(log.decode("utf-8", errors="replace"))
                )
                record.say(f"==> step {step['name']}: {message}\n")
                step.update(
                    status=results.CANCELLED if phase == results.CANCELLED else results.FAILED,
                    finishedAt=_now(),
                )
            elif step["status"] == results.PENDING:
                step["status"] = results.SKIPPED
        ran = [i for i, step in enumerate(steps) if step.get("exitCode") is not None]
        if ran:
            self._collect_outputs(sandbox, record, ran[-1])

    def _collect_outputs(self, sandbox: api.Sandbox, record: Record, index: int) -> None:
        listing = sandbox.read(_sandbox_path(f"{_step_dir(index)}/outputs")) or b""
        target = record.path / "outputs"
        for line in listing.decode("utf-8", errors="replace").splitlines():
            relative = line.removeprefix("./")
            try:
                check_relative_path(relative, "output")
            except ValueError:
                continue
            content = sandbox.read(_sandbox_path(f"outputs/{relative}"))
            if content is None:
                continue
            path = target / PurePosixPath(relative)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            mask_file(path, record.mask_values())

    def cancel(self, ref: Mapping[str, Any]) -> None:
        """Mark it cancelled: the next observe stops it (the step, then the sandbox)."""
        record = Record(ref)
        with record.locked():  # a lost record too: the marker reaches the next observe
            done = record.result()
            if done is None or done["phase"] not in results.FINAL_PHASES:
                write_atomic(record.cancel_marker, "cancelled")

    def delete(self, ref: Mapping[str, Any]) -> None:
        """Delete the sandbox (found by id, or by the Job's UID), then the local record."""
        record = Record(ref)
        conn = _connection(ref)
        state = record.state() if record.path.is_dir() else {}
        sandbox_id = state.get("sandboxId") or api.find(conn, str(ref["id"]))
        if sandbox_id:
            api.kill(conn, sandbox_id)
        shutil.rmtree(record.path, ignore_errors=True)

    def log(self, ref: Mapping[str, Any], limit_bytes: int | None = None) -> str:
        record = Record(ref)
        try:
            data = (record.path / "log").read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return ""
        if limit_bytes is not None:
            data = data[-max(0, limit_bytes) :] if limit_bytes else b""
        return data.decode("utf-8", errors="replace")

    def outputs_dir(self, ref: Mapping[str, Any]) -> Path:
        """Where the Job's outputs are, once it ended."""
        return Record(ref).path / "outputs"
