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

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from .refs import ArtifactRef

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


class ActiveRun(TypedDict):
    """An attempt executing here, as the heartbeat lists it."""

    uid: str
    attempt: int


class HeartbeatMessage(TypedDict):
    """The ``scheduling.runtime_pod_heartbeat`` kwarg ``heartbeat``."""

    namespace: str
    runtime: str
    podName: str
    podUID: str
    capacity: dict[str, int]
    activeRuns: list[ActiveRun]
    recentReports: list[Report]
    time: str
    workspacePath: str
    host: str
    pid: int


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
