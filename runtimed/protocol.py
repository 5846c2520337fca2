"""The wire protocol between the control plane and runtimed: task and queue names, and the
shape (every key) of each message.

Both sides import these (the control plane may import runtimed; runtimed imports nothing of
the control plane), so a name cannot drift on one side only; mypy checks runtimed's messages
against the TypedDicts, and ``tests/scheduling/test_protocol.py`` checks that the control plane
builds and reads only these keys. Parsing a payload is ``runtimed.payload`` (a workspace
delete request: ``runtimed.cleanup``); building the messages runtimed sends is
``runtimed.reporting.run_report``, ``runtimed.heartbeat.heartbeat_message``,
``runtimed.logship`` and ``runtimed.cleanup`` (``workspaces.workspace_deleted``).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

# the artifact reference type and its rules, which both sides check
from .refs import ArtifactRef as ArtifactRef
from .refs import Problem as Problem
from .refs import artifact_name_problem as artifact_name_problem
from .refs import location_path_problem as location_path_problem
from .refs import ref_namespace as ref_namespace

# A report as read back from disk or a heartbeat: not validated, so any mapping.
Report = Mapping[str, Any]

CONTROL_QUEUE = "control"  # the control plane's queue: reports, heartbeats, log chunks
POD_QUEUE_PREFIX = "runtimed."  # each Runtime Pod consumes runtimed.<pod-name>

# control plane -> runtimed (on the pod's queue)
EXECUTE_RUN_TASK = "runtimed.execute_run"
CANCEL_RUN_TASK = "runtimed.cancel_run"
CONFIRM_REPORTS_TASK = "runtimed.confirm_reports"
DELETE_WORKSPACE_TASK = "runtimed.delete_workspace"

# runtimed -> control plane (on CONTROL_QUEUE)
REPORT_RUN_TASK = "scheduling.report_run"
HEARTBEAT_TASK = "scheduling.runtime_pod_heartbeat"
APPEND_LOG_TASK = "scheduling.append_log"
WORKSPACE_DELETED_TASK = "workspaces.workspace_deleted"


def pod_queue(pod_name: str) -> str:
    return f"{POD_QUEUE_PREFIX}{pod_name}"


# ---------------------------------------------------------------- the words of a report


class Phase:
    """The phases a report names (a Run's other phases, Pending and Scheduled, are the
    control plane's own)."""

    RUNNING = "Running"
    READY = "Ready"  # a function-mode Run that serves
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMEOUT = "Timeout"
    CANCELLED = "Cancelled"

    FINAL = (SUCCEEDED, FAILED, TIMEOUT, CANCELLED)


class Reason:
    """Why an attempt ended: the reasons runtimed reports, then those the control plane
    concludes itself; the condition reason of ``Running``/``Completed`` and of the Run."""

    # reported by runtimed
    PREPARE_SOURCE = "PrepareSource"  # the spec cannot be prepared on the pod
    RUNTIME_EXECUTE = "RuntimeExecute"  # the step exited non-zero
    TIMEOUT = "Timeout"  # the step outlived timeoutSeconds and was killed
    RUNTIME_ERROR = "RuntimeError"  # runtimed itself failed (a start, an upload)
    OUTPUTS_INVALID = "OutputsInvalid"
    OUTPUTS_TOO_LARGE = "OutputsTooLarge"
    ARTIFACT_INVALID = "ArtifactInvalid"
    POD_TERMINATING = "PodTerminating"  # also concluded when a pod is stopped on purpose
    CANCELLED = "Cancelled"
    IDLE_TIMEOUT = "IdleTimeout"  # a function Run saw no invocation for idleTimeoutSeconds
    # concluded by the control plane
    POD_GONE = "PodGone"
    POD_UNHEALTHY = "PodUnhealthy"
    EXECUTION_LOST = "ExecutionLost"
    FRACTIONAL_RESOURCE_REQUEST = "FractionalResourceRequest"

    ALL = frozenset(
        {
            PREPARE_SOURCE,
            RUNTIME_EXECUTE,
            TIMEOUT,
            RUNTIME_ERROR,
            OUTPUTS_INVALID,
            OUTPUTS_TOO_LARGE,
            ARTIFACT_INVALID,
            POD_TERMINATING,
            CANCELLED,
            POD_GONE,
            POD_UNHEALTHY,
            EXECUTION_LOST,
            FRACTIONAL_RESOURCE_REQUEST,
            IDLE_TIMEOUT,
        }
    )

    # the retry classes (spec.retryPolicy): an attempt lost with its pod or runtimed...
    LOST = (POD_GONE, POD_TERMINATING, POD_UNHEALTHY, EXECUTION_LOST)
    # ...is retried without retryableReasons, as is runtimed's own failure
    RETRIED_BY_DEFAULT = frozenset({*LOST, RUNTIME_ERROR})
    # running the same step again cannot fix these: never retried, whatever is listed
    NEVER_RETRIED = frozenset(
        {
            CANCELLED,
            OUTPUTS_INVALID,
            OUTPUTS_TOO_LARGE,
            ARTIFACT_INVALID,
            PREPARE_SOURCE,
            FRACTIONAL_RESOURCE_REQUEST,
            IDLE_TIMEOUT,
        }
    )


# the Ready condition's reason while a function Run serves
FUNCTION_REGISTERED = "FunctionRegistered"

# ---------------------------------------------------------------- function mode: the dataplane
# The gateway (control plane) invokes a Ready function Run through the owning runtimed: gRPC
# ``executor.v1.FunctionRuntime/InvokeFunction`` at the pod's dataplane address (the heartbeat's
# ``dataplane``: ``unix:/path`` or ``host:port``). ``registration.run_uid`` names the Run (its
# ``registration_id`` is runtimed's business and left empty); these metadata keys carry the
# shared dataplane key and the fence: runtimed answers only for the attempt and pod incarnation
# it serves (FAILED_PRECONDITION otherwise, NOT_FOUND for a Run it does not serve).
# The frames on the dataplane's connection (persistent: one call at a time on each, a client
# opens as many as it has calls in flight); every number big-endian:
#   request:  u32 length, then u8 version (1), u16 key length, key, u32 attempt,
#             u16 pod uid length, pod uid, and the InvokeFunctionRequest message (protobuf)
#   response: u32 length, then u8 gRPC status code, and the InvokeFunctionResponse message
#             (code 0) or the error's details (UTF-8)
# A frame longer than MAX_DATAPLANE_FRAME ends the connection. gRPC's own transport cost more
# per call than everything else on the path (a Python gRPC server and client: ~1 ms of CPU).
DATAPLANE_VERSION = 1
DATAPLANE_KEY_METADATA = "x-kruntimes-dataplane-key"
ATTEMPT_METADATA = "x-kruntimes-attempt"
POD_UID_METADATA = "x-kruntimes-pod-uid"
INVOCATION_ID_HEADER = "X-Kruntime-Invocation-ID"  # the gateway's HTTP header
MAX_INVOKE_BYTES = 1 << 20  # request body and response body
MAX_INVOCATION_ID_BYTES = 128
DEFAULT_INVOKE_TIMEOUT_SECONDS = 60
MAX_INVOKE_TIMEOUT_SECONDS = 900
MAX_DATAPLANE_FRAME = MAX_INVOKE_BYTES + 256 * 1024  # the message around the payload
_LENGTH = struct.Struct(">I")
_REQUEST_HEAD = struct.Struct(">BH")
_ATTEMPT = struct.Struct(">IH")


class FrameError(ValueError):
    """A frame that is not the dataplane's."""


@dataclass(frozen=True)
class DataplaneRequest:
    key: str
    attempt: int
    pod_uid: str
    message: bytes  # an InvokeFunctionRequest


def length_prefix(body: bytes) -> bytes:
    return _LENGTH.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    """The body length a frame's first four bytes announce; FrameError beyond the limit."""
    length: int = _LENGTH.unpack(header)[0]
    if length > MAX_DATAPLANE_FRAME:
        raise FrameError(f"a dataplane frame of {length} bytes is over the limit")
    return length


def encode_request(key: str, attempt: int, pod_uid: str, message: bytes) -> bytes:
    key_bytes, pod = key.encode(), pod_uid.encode()
    return length_prefix(
        _REQUEST_HEAD.pack(DATAPLANE_VERSION, len(key_bytes))
        + key_bytes
        + _ATTEMPT.pack(attempt, len(pod))
        + pod
        + message
    )


def decode_request(body: bytes) -> DataplaneRequest:
    try:
        version, key_length = _REQUEST_HEAD.unpack_from(body, 0)
        if version != DATAPLANE_VERSION:
            raise FrameError(f"dataplane frame version {version} is not {DATAPLANE_VERSION}")
        at = _REQUEST_HEAD.size
        key = body[at : at + key_length].decode()
        at += key_length
        attempt, pod_length = _ATTEMPT.unpack_from(body, at)
        at += _ATTEMPT.size
        pod_uid = body[at : at + pod_length].decode()
        at += pod_length
    except (struct.error, UnicodeDecodeError) as exc:
        raise FrameError(f"a malformed dataplane frame: {exc}") from None
    if at > len(body):
        raise FrameError("a truncated dataplane frame")
    return DataplaneRequest(key, attempt, pod_uid, body[at:])


def encode_response(code: int, payload: bytes) -> bytes:
    return length_prefix(bytes((code,)) + payload)


def decode_response(body: bytes) -> tuple[int, bytes]:
    if not body:
        raise FrameError("an empty dataplane answer")
    return body[0], body[1:]


# What a status message may carry: one line, at most this many characters (``status_message``).
MESSAGE_LIMIT = 4096
_ELLIPSIS = "…"


def one_line(message: str) -> str:
    """A status message on one line: its non-blank lines, trimmed, joined by ``; ``.

    Multi-line text (git's stderr, an exception that quotes a file) must not turn a Run's
    message into a wall of text; tracebacks go to runtimed's own log, never here.
    """
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def truncate(message: str, limit: int = MESSAGE_LIMIT) -> str:
    if len(message) <= limit:
        return message
    return message[: limit - len(_ELLIPSIS)] + _ELLIPSIS


def status_message(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """What a Run's status may carry: one line, at most ``limit`` characters."""
    return truncate(one_line(message), limit)


# ---------------------------------------------------------------- what a pod leaves on disk
# A gone local pod's recorded final reports are read from its workspace (the local provider's
# recovery); runtimed writes them there.

RUNS_DIR = Path(".kruntimes") / "runs"  # <root>/.kruntimes/runs/<run uid>/attempt-<n>.*
OUTBOX_DIR = ".kruntimes/outbox"  # under the pod's workspace: the reports still owed
PERSISTENT_DIR = "persistent"  # under the pod's workspace: one directory per workspace


def run_roots(workspace: Path) -> list[Path]:
    """Every directory whose ``.kruntimes/runs`` may hold Run directories: the pod workspace,
    then each persistent workspace (a symlink among them is skipped)."""
    base = workspace / PERSISTENT_DIR
    try:
        entries = sorted(entry for entry in base.iterdir() if not entry.is_symlink())
    except OSError:  # no persistent workspaces (yet), or unreadable
        entries = []
    return [workspace, *(entry for entry in entries if entry.is_dir())]


ReportKey = tuple[str, int]


def report_key(report: Report) -> ReportKey | None:
    """(uid, attempt) of a final report: what a confirmation names; None if malformed."""
    uid, attempt = report.get("uid"), report.get("attempt")
    if not isinstance(uid, str) or isinstance(attempt, bool) or not isinstance(attempt, int):
        return None
    return uid, attempt


# ---------------------------------------------------------------- control plane -> runtimed


class RunIdentity(TypedDict):
    namespace: str
    name: str
    uid: str
    attempt: int


class PodIdentity(TypedDict):
    name: str
    uid: str


class Identity(TypedDict):
    """Which attempt of which Run on which pod incarnation: every message about a Run carries
    it (with the Run's workspace, all of ``runtimed.cancel_run``'s kwarg ``payload``)."""

    run: RunIdentity
    pod: PodIdentity


class WorkspaceRef(TypedDict):
    """The PersistentWorkspace a Run uses (its ``spec.workspace.name``)."""

    name: str


class RunWorkspace(TypedDict, total=False):
    """Only for a Run with ``spec.workspace``: its directory is in that workspace (see
    ``runtimed.persistent``), so each message about its attempt says which."""

    workspace: WorkspaceRef


class CancelPayload(Identity, RunWorkspace):
    """The ``runtimed.cancel_run`` kwarg ``payload``."""


class ExecutePayload(Identity, RunWorkspace):
    """The ``runtimed.execute_run`` kwarg ``payload``: everything runtimed needs, so it never
    asks back. ``workspace`` only for a Run with ``spec.workspace``."""

    source: Mapping[str, Any]
    mode: Mapping[str, Any]
    env: list[dict[str, str]]
    timeoutSeconds: float | None
    workingDir: str | None
    artifactStore: Mapping[str, Any] | None
    artifactInputs: list[Mapping[str, Any]]


class DeleteWorkspacePayload(TypedDict):
    """The ``runtimed.delete_workspace`` kwarg ``payload`` (cleanup of a PersistentWorkspace
    bound to this pod): runtimed deletes ``<workspace>/persistent/<name>`` when no local Run
    uses it, then sends ``workspaces.workspace_deleted``; while one does it does nothing and
    the controller sends this again later."""

    namespace: str
    name: str
    uid: str  # the PersistentWorkspace's UID
    pod: PodIdentity


# ---------------------------------------------------------------- runtimed -> control plane


class ReportExtras(TypedDict, total=False):
    artifactStore: Mapping[str, Any]  # Runtime.spec.artifactStore, as the payload had it
    outputs: Mapping[str, str]
    artifactRefs: Sequence[ArtifactRef]
    log: LogChunk  # a final report carries the attempt's last output chunk


class RunReport(ReportExtras):
    """The ``scheduling.report_run`` kwarg ``report`` (see :func:`run_report`); a final report
    is sent with the attempt's last output chunk under ``log`` as well (``tasks``)."""

    namespace: str
    name: str
    uid: str
    attempt: int
    podName: str
    podUID: str
    phase: str
    reason: str
    message: str
    exitCode: int | None
    startTime: str | None
    completionTime: str | None


class FunctionStats(TypedDict):
    """A serving function Run's invocations since it became Ready (bounded: counts, a rate and
    the last few errors), as the heartbeat carries them; nothing per invocation is kept."""

    invocations: int
    errors: int
    perSecond: float  # over the last minute
    recentErrors: list[str]  # the newest last, at most 5, each at most 256 characters
    readySince: str  # RFC 3339


class _ActiveRunBase(TypedDict):
    uid: str
    attempt: int


class ActiveRun(_ActiveRunBase, total=False):
    """An attempt executing here, as the heartbeat lists it; a Ready function Run also carries
    its invocation figures."""

    function: FunctionStats


class HeartbeatMessage(TypedDict):
    """The ``scheduling.runtime_pod_heartbeat`` kwarg ``heartbeat``."""

    namespace: str
    runtime: str
    podName: str
    podUID: str
    # which start of the pod sent it (a restarted local pod keeps its name and UID)
    podIncarnation: int
    capacity: dict[str, int]
    activeRuns: list[ActiveRun]
    recentReports: list[Report]
    time: str
    workspacePath: str
    host: str
    pid: int
    # where the gateway reaches this runtimed's dataplane ("" when it serves no functions)
    dataplane: str


class LogIdentity(TypedDict):
    namespace: str
    name: str
    uid: str
    attempt: int
    podUID: str


class LogChunk(LogIdentity):
    """The ``scheduling.append_log`` kwarg ``chunk``."""

    offset: int  # raw-byte offset of the chunk in the attempt's output
    size: int  # raw bytes the chunk covers
    text: str


class WorkspaceDeleted(TypedDict):
    """The ``workspaces.workspace_deleted`` kwarg ``payload``: the pod deleted the workspace's
    directory (or it was already gone); the controller may remove its cleanup finalizer."""

    namespace: str
    name: str
    uid: str  # the PersistentWorkspace's UID, as the delete request had it
    podName: str
    podUID: str
