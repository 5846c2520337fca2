"""The OpenSandbox API as the OpenSandbox adapter uses it, through the ``opensandbox`` SDK's
synchronous clients (``SandboxSync``, ``SandboxManagerSync``: blocking httpx calls, safe from
the sync Celery and controller code; the SDK's async clients would need an event loop).

Every call is bounded by ``KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS`` (the SDK's request timeout,
the endpoint/readiness budgets, the health probe, and every phase the SDK leaves unbounded,
through the shared transport), and fails fast (the SDK's retries are off:
the controller's next pass is the retry). The API key is read from its Secret for every
connection, so a rotated key is used by the next call without a restart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from opensandbox import SandboxManagerSync, SandboxSync
from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.exceptions import SandboxApiException, SandboxException
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.filesystem import SearchEntry, WriteEntry
from opensandbox.models.sandboxes import SandboxFilter, SandboxImageAuth, SandboxImageSpec
from opensandbox.transport import RetryPolicy

from portal.secrets import MissingReference, secret_value

from .base import BackendError

API_KEY_HEADER = "OPEN-SANDBOX-API-KEY"  # what the SDK sends the key as
JOB_UID_METADATA = "execution.ayatori.ddupan.top/job-uid"
HEALTH_PATH = "/health"


class APIKeyMissing(Exception):  # noqa: N818 - a condition, not a failure
    """The Secret (or its key) the parameters' apiKeySecretRef names is missing."""


class Unauthorized(BackendError):
    """The backend refused the API key (401/403)."""


class _BoundedTransport(httpx.HTTPTransport):
    """The SDK's HTTP transport with no unbounded wait: a request whose timeout leaves a
    phase unbounded (the SDK's command event stream reads without one) gets the setting's."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        seconds = float(settings.KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS)
        timeout = dict(request.extensions.get("timeout") or {})
        for phase in ("connect", "read", "write", "pool"):
            if timeout.get(phase) is None:
                timeout[phase] = seconds
        request.extensions["timeout"] = timeout
        return super().handle_request(request)


_transport = _BoundedTransport()  # one pool for the process (httpx transports are thread-safe)


@dataclass(frozen=True)
class Connection:
    endpoint: str  # scheme://host[:port][/path], no trailing slash
    api_key: str

    @property
    def timeout(self) -> float:
        return float(settings.KRUNTIMES_OPENSANDBOX_TIMEOUT_SECONDS)

    def config(self) -> ConnectionConfigSync:
        return ConnectionConfigSync(
            api_key=self.api_key,
            domain=self.endpoint,
            protocol=self.endpoint.split("://", 1)[0],
            request_timeout=timedelta(seconds=self.timeout),
            retry_policy=RetryPolicy.disabled(),
            transport=_transport,
            endpoint_cache_disabled=True,
            disable_metrics=True,
        )


def connection(parameters: Mapping[str, Any]) -> Connection:
    """The endpoint and the API key as the parameters name them now (the key read afresh)."""
    ref = parameters.get("apiKeySecretRef") or {}
    try:
        raw = secret_value(ref.get("namespace", ""), ref.get("name", ""), ref.get("key", ""))
    except MissingReference as exc:
        raise APIKeyMissing(f"apiKeySecretRef: {exc}") from None
    key = raw.decode("utf-8", errors="replace").strip()
    if not key:
        raise APIKeyMissing(
            f"apiKeySecretRef: key {ref.get('key')} of secret {ref.get('namespace')}/"
            f"{ref.get('name')} is empty"
        )
    return Connection(str(parameters.get("endpoint", "")).rstrip("/"), key)


def _failed(what: str, exc: Exception) -> BackendError:
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return Unauthorized(f"{what}: the OpenSandbox API refused the API key ({status})")
    return BackendError(f"{what}: {exc}")


def _status(exc: Exception) -> int | None:
    return exc.status_code if isinstance(exc, SandboxApiException) else None


def health(conn: Connection) -> None:
    """The server's health endpoint answers 2xx, or BackendError says why not."""
    url = conn.endpoint + HEALTH_PATH
    try:
        response = httpx.get(url, timeout=conn.timeout, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise BackendError(f"GET {url}: {exc}") from None
    if response.status_code >= 300:
        raise BackendError(f"GET {url}: {response.status_code}")


@contextmanager
def _manager(conn: Connection) -> Iterator[SandboxManagerSync]:
    manager = SandboxManagerSync.create(connection_config=conn.config())
    try:
        yield manager
    finally:
        manager.close()


def check_key(conn: Connection) -> None:
    """An authenticated call (a one-item list): Unauthorized when the key is refused."""
    try:
        with _manager(conn) as manager:
            manager.list_sandbox_infos(SandboxFilter(page_size=1))
    except SandboxException as exc:
        raise _failed("listing sandboxes", exc) from None


def find(conn: Connection, job_uid: str) -> str | None:
    """The id of the live sandbox created for the Job (by its metadata), or None."""
    try:
        with _manager(conn) as manager:
            page = manager.list_sandbox_infos(
                SandboxFilter(metadata={JOB_UID_METADATA: job_uid}, page_size=10)
            )
    except SandboxException as exc:
        raise _failed("listing sandboxes", exc) from None
    live = [
        info.id
        for info in page.sandbox_infos
        if str(getattr(info.status, "state", "")).lower() not in ("terminated", "failed")
    ]
    return live[0] if live else None


@dataclass(frozen=True)
class SandboxRequest:
    image: str
    entrypoint: list[str]
    env: dict[str, str]
    resource_limits: dict[str, str]
    resource_requests: dict[str, str] | None
    extensions: dict[str, str]
    metadata: dict[str, str]
    image_auth: tuple[str, str] | None = None  # (username, password)
    timeout_seconds: int | None = None  # the sandbox's own lifetime (a safety net)


def create(conn: Connection, request: SandboxRequest) -> str:
    """Create the sandbox and wait (bounded) until its execd answers; its id."""
    image = SandboxImageSpec(
        image=request.image,
        auth=SandboxImageAuth(username=request.image_auth[0], password=request.image_auth[1])
        if request.image_auth
        else None,
    )
    try:
        sandbox = SandboxSync.create(
            image,
            timeout=timedelta(seconds=request.timeout_seconds) if request.timeout_seconds else None,
            ready_timeout=timedelta(seconds=conn.timeout),
            env=request.env,
            metadata=request.metadata,
            resource=request.resource_limits,
            resource_requests=request.resource_requests,
            extensions=request.extensions,
            entrypoint=request.entrypoint,
            connection_config=conn.config(),
        )
    except SandboxException as exc:
        raise _failed("creating the sandbox", exc) from None
    sandbox.close()
    return str(sandbox.id)


class Sandbox:
    """One existing sandbox's execd (commands and files), connected for a few calls."""

    def __init__(self, conn: Connection, sandbox_id: str) -> None:
        self.id = sandbox_id
        try:
            self._sandbox = SandboxSync.connect(
                sandbox_id,
                connection_config=conn.config(),
                connect_timeout=timedelta(seconds=conn.timeout),
                skip_health_check=True,
            )
        except SandboxException as exc:
            if _status(exc) == 404:
                raise SandboxGone(f"sandbox {sandbox_id} does not exist") from None
            raise _failed(f"connecting to sandbox {sandbox_id}", exc) from None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self._sandbox.close()

    def start(self, command: str, working_directory: str) -> str:
        """Start ``command`` in the background (one execd command); its execution id."""
        try:
            execution = self._sandbox.commands.run(
                command,
                opts=RunCommandOpts(background=True, working_directory=working_directory),
            )
        except SandboxException as exc:
            raise _failed(f"starting a command in sandbox {self.id}", exc) from None
        return execution.id or ""

    def interrupt(self, execution_id: str) -> None:
        try:
            self._sandbox.commands.interrupt(execution_id)
        except SandboxException as exc:
            if _status(exc) != 404:
                raise _failed(f"interrupting command {execution_id}", exc) from None

    def write(self, files: Mapping[str, str | bytes], mode: int = 644) -> None:
        if not files:
            return
        entries = [WriteEntry(path=path, data=data, mode=mode) for path, data in files.items()]
        try:
            self._sandbox.files.write_files(entries)
        except SandboxException as exc:
            raise _failed(f"writing files into sandbox {self.id}", exc) from None

    def files(self, directory: str) -> set[str]:
        """The paths of the files under ``directory`` (execd's search, pattern ``*``)."""
        try:
            found = self._sandbox.files.search(SearchEntry(path=directory, pattern="*"))
        except SandboxException as exc:
            if _status(exc) == 404:
                return set()
            raise _failed(f"listing {directory} in sandbox {self.id}", exc) from None
        return {entry.path for entry in found}

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        try:
            return self._sandbox.files.read_bytes(path)
        except SandboxException as exc:
            if _status(exc) == 404:
                return None
            raise _failed(f"reading {path} from sandbox {self.id}", exc) from None


class SandboxGone(BackendError):
    """The sandbox does not exist (any more)."""


def kill(conn: Connection, sandbox_id: str) -> None:
    """Delete the sandbox; one already gone is fine."""
    try:
        with _manager(conn) as manager:
            manager.kill_sandbox(sandbox_id)
    except SandboxException as exc:
        if _status(exc) != 404:
            raise _failed(f"deleting sandbox {sandbox_id}", exc) from None
