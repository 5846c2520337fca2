"""The Runtime Pod's identity and wiring, read once from the environment.

runtimed never reads Django settings: everything it needs arrives as environment variables set
by whoever starts the pod (``manage.py up`` for the local provider, the Deployment's downward
API for the kubernetes provider).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .protocol import pod_queue

# the Runtime Servers runtimed hosts itself (runtimed.runtime_server.programs.BUILT_IN)
BUILT_IN_SERVERS = ("bash", "python")

DEFAULT_CAPACITY = {"runs": 2}
DEFAULT_HEARTBEAT_SECONDS = 5.0
DEFAULT_POLLING_INTERVAL = 0.05
BROKER_SUBFOLDERS = ("queue", "processed", "control")
DEFAULT_MAX_ARTIFACT_BYTES = 1 << 30  # 1 GiB per artifact
DEFAULT_MAX_RUN_ARTIFACT_BYTES = 10 << 30  # 10 GiB per Run
# The Redis transport's redelivery window for unacknowledged messages (as the portal uses).
REDIS_VISIBILITY_TIMEOUT = 3600
# After SIGTERM, running steps get this long to finish before they are stopped (PodTerminating);
# the pod's own grace (the provider's, or terminationGracePeriodSeconds) must be longer.
DEFAULT_TERMINATION_GRACE_SECONDS = 25.0


class ConfigError(ValueError):
    """The environment does not describe a usable Runtime Pod."""


@dataclass(frozen=True)
class PodConfig:
    pod_name: str
    pod_uid: str
    namespace: str
    runtime: str
    workspace: Path
    capacity: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS
    broker_url: str = "filesystem://"
    broker_dir: Path | None = None
    polling_interval: float = DEFAULT_POLLING_INTERVAL
    # Where the artifact-store volumes are mounted, one directory per claim name.
    artifact_volumes: Path | None = None
    # Secrets mounted for this pod, one directory per Secret (one file per key).
    secrets_dir: Path | None = None
    max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES
    termination_grace_seconds: float = DEFAULT_TERMINATION_GRACE_SECONDS
    max_run_artifact_bytes: int = DEFAULT_MAX_RUN_ARTIFACT_BYTES
    # Which start of the pod this process is (a local pod keeps its name and UID across a
    # restart of ``manage.py up``): its heartbeats carry it, those of an older one are refused.
    pod_incarnation: int = 0
    # The pod's Runtime Server (runtimed.runtime_host): a built-in one by name, or a command
    # runtimed starts beside it (KRUNTIME_RUNTIME_SERVER / KRUNTIME_RUNTIME_SERVER_COMMAND).
    runtime_server: str = "bash"
    runtime_server_command: tuple[str, ...] = ()
    # or one already listening in the pod (the runtime container in Kubernetes, as kruntimes):
    # unix:/path or 127.0.0.1:port (KRUNTIME_RUNTIME_SERVER_ADDRESS)
    runtime_server_address: str = ""
    # the function dataplane (runtimed.dataplane): where this runtimed listens for the gateway
    # (unix:/path or host:port; KRUNTIME_DATAPLANE_ADDRESS, "" serves no functions) and the key
    # the gateway shows (KRUNTIME_DATAPLANE_KEY)
    dataplane_address: str = ""
    dataplane_key: str = ""

    @property
    def queue(self) -> str:
        """The one queue this pod consumes: ``runtimed.<pod-name>``."""
        return pod_queue(self.pod_name)

    @property
    def runs_capacity(self) -> int:
        return max(1, int(self.capacity.get("runs", 1)))

    def transport_options(self) -> dict[str, object]:
        """Broker transport options, matching what the portal's settings use."""
        if not self.broker_url.startswith("filesystem://"):
            return {"visibility_timeout": REDIS_VISIBILITY_TIMEOUT}
        assert self.broker_dir is not None  # from_env guarantees it
        return {
            "data_folder_in": str(self.broker_dir / "queue"),
            "data_folder_out": str(self.broker_dir / "queue"),
            "processed_folder": str(self.broker_dir / "processed"),
            "store_processed": False,
            "control_folder": str(self.broker_dir / "control"),
            "polling_interval": self.polling_interval,
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PodConfig:
        env = os.environ if environ is None else environ
        missing = [
            name
            for name in (
                "KRUNTIME_POD_NAME",
                "KRUNTIME_POD_UID",
                "KRUNTIME_POD_NAMESPACE",
                "KRUNTIME_RUNTIME",
                "KRUNTIME_WORKSPACE",
            )
            if not env.get(name, "").strip()
        ]
        if missing:
            raise ConfigError("runtimed needs these environment variables: " + ", ".join(missing))
        broker_url = env.get("CELERY_BROKER_URL", "").strip() or "filesystem://"
        return cls(
            pod_name=env["KRUNTIME_POD_NAME"].strip(),
            pod_uid=env["KRUNTIME_POD_UID"].strip(),
            namespace=env["KRUNTIME_POD_NAMESPACE"].strip(),
            runtime=env["KRUNTIME_RUNTIME"].strip(),
            workspace=_workspace(env["KRUNTIME_WORKSPACE"].strip()),
            capacity=_capacity(env.get("KRUNTIME_CAPACITY", "")),
            heartbeat_seconds=_positive(
                env, "KRUNTIME_HEARTBEAT_SECONDS", DEFAULT_HEARTBEAT_SECONDS
            ),
            broker_url=broker_url,
            broker_dir=_broker_dir(env) if broker_url.startswith("filesystem://") else None,
            polling_interval=_positive(env, "CELERY_POLLING_INTERVAL", DEFAULT_POLLING_INTERVAL),
            artifact_volumes=_optional_dir(env, "KRUNTIME_ARTIFACT_VOLUMES"),
            secrets_dir=_optional_dir(env, "KRUNTIME_SECRETS_DIR"),
            max_artifact_bytes=_bytes(
                env, "KRUNTIME_ARTIFACT_MAX_BYTES", DEFAULT_MAX_ARTIFACT_BYTES
            ),
            max_run_artifact_bytes=_bytes(
                env, "KRUNTIME_RUN_ARTIFACT_MAX_BYTES", DEFAULT_MAX_RUN_ARTIFACT_BYTES
            ),
            termination_grace_seconds=_positive(
                env, "KRUNTIME_TERMINATION_GRACE_SECONDS", DEFAULT_TERMINATION_GRACE_SECONDS
            ),
            pod_incarnation=_count(env, "KRUNTIME_POD_INCARNATION"),
            runtime_server=_runtime_server(env.get("KRUNTIME_RUNTIME_SERVER", "")),
            runtime_server_command=_command(env.get("KRUNTIME_RUNTIME_SERVER_COMMAND", "")),
            runtime_server_address=env.get("KRUNTIME_RUNTIME_SERVER_ADDRESS", "").strip(),
            dataplane_address=env.get("KRUNTIME_DATAPLANE_ADDRESS", "").strip(),
            dataplane_key=env.get("KRUNTIME_DATAPLANE_KEY", "").strip(),
        )


def _runtime_server(value: str) -> str:
    name = value.strip() or "bash"
    if name not in BUILT_IN_SERVERS:
        raise ConfigError(
            f"KRUNTIME_RUNTIME_SERVER must be one of {', '.join(BUILT_IN_SERVERS)}, got {name!r}"
        )
    return name


def _command(value: str) -> tuple[str, ...]:
    if not value.strip():
        return ()
    try:
        argv = json.loads(value)
    except ValueError as exc:
        raise ConfigError(f"KRUNTIME_RUNTIME_SERVER_COMMAND is not JSON: {exc}") from exc
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ConfigError("KRUNTIME_RUNTIME_SERVER_COMMAND must be a JSON list of strings")
    return tuple(argv)


def _workspace(value: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        raise ConfigError(f"KRUNTIME_WORKSPACE must be an absolute path, got {value!r}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"KRUNTIME_WORKSPACE {value!r} cannot be created: {exc}") from exc
    return path.resolve()


def _optional_dir(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    path = Path(raw)
    if not path.is_absolute():
        raise ConfigError(f"{name} must be an absolute path, got {raw!r}")
    return path


def _bytes(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"{name} must be a positive number of bytes, got {raw!r}")
    return int(raw)


def _count(env: Mapping[str, str], name: str) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise ConfigError(f"{name} must be a non-negative integer, got {raw!r}")
    return int(raw)


def _capacity(value: str) -> dict[str, int]:
    if not value.strip():
        return dict(DEFAULT_CAPACITY)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"KRUNTIME_CAPACITY is not JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ConfigError('KRUNTIME_CAPACITY must be a JSON object, e.g. {"runs": 2}')
    for name, amount in parsed.items():
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise ConfigError(
                f"KRUNTIME_CAPACITY[{name!r}] must be a non-negative integer, got {amount!r}"
            )
    return parsed


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


def _broker_dir(env: Mapping[str, str]) -> Path:
    raw = env.get("KRUNTIMES_BROKER_DIR", "").strip()
    if not raw:
        raise ConfigError(
            "the filesystem broker (CELERY_BROKER_URL=filesystem://) needs "
            "KRUNTIMES_BROKER_DIR, the folder holding queue/, processed/, control/"
        )
    path = Path(raw)
    if not path.is_absolute():
        raise ConfigError(f"KRUNTIMES_BROKER_DIR must be an absolute path, got {raw!r}")
    try:
        for sub in BROKER_SUBFOLDERS:
            (path / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"KRUNTIMES_BROKER_DIR {raw!r} cannot be created: {exc}") from exc
    return path
