"""The wire protocol has one definition: both sides register and send the names in
``runtimed.protocol``, and no other source file spells them out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from runtimed import protocol

ROOT = Path(__file__).resolve().parents[2]
NAMES = [
    protocol.EXECUTE_RUN_TASK,
    protocol.CANCEL_RUN_TASK,
    protocol.CONFIRM_REPORTS_TASK,
    protocol.DELETE_WORKSPACE_TASK,
    protocol.REPORT_RUN_TASK,
    protocol.HEARTBEAT_TASK,
    protocol.APPEND_LOG_TASK,
    protocol.WORKSPACE_DELETED_TASK,
]


def test_the_control_plane_registers_every_task_runtimed_sends():
    import scheduling.tasks  # noqa: F401 - registers the control tasks
    import workspaces.tasks  # noqa: F401
    from portal.celery import app

    assert {
        protocol.REPORT_RUN_TASK,
        protocol.HEARTBEAT_TASK,
        protocol.APPEND_LOG_TASK,
        protocol.WORKSPACE_DELETED_TASK,
    } <= set(app.tasks)


def test_no_source_file_but_the_protocol_spells_a_task_name():
    quoted = re.compile("|".join(re.escape(f'"{name}"') for name in NAMES))
    offenders = []
    for package in ("portal", "scheduling", "runtimed", "workspaces", "workflows", "jobclasses"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "runtimed" / "protocol.py":
                continue
            if quoted.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


# ------------------------------------------------------------------------------ message keys
# Each message's keys are the TypedDicts in runtimed.protocol. runtimed builds them under mypy;
# the control plane's side is checked here: it builds exactly these keys and reads no other.


def keys(message_type) -> set[str]:
    return set(message_type.__required_keys__ | message_type.__optional_keys__)


def required_keys(message_type) -> set[str]:
    return set(message_type.__required_keys__)


def reads(path: Path, variable: str) -> set[str]:
    """The string keys ``variable`` is read with in ``path``: ``v["k"]``, ``v.get("k")``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == variable
            and isinstance(node.slice, ast.Constant)
        ):
            found.add(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == variable
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(node.args[0].value)
    return found


READERS = [
    # (module, the variable holding the message there, its type)
    ("scheduling/lifecycle.py", "report", protocol.RunReport),
    ("scheduling/recovery.py", "report", protocol.RunReport),
    ("scheduling/tasks.py", "report", protocol.RunReport),
    ("scheduling/dispatch.py", "report", protocol.RunReport),
    ("scheduling/pods.py", "beat", protocol.HeartbeatMessage),
    ("scheduling/tasks.py", "heartbeat", protocol.HeartbeatMessage),
    ("scheduling/dispatch.py", "heartbeat", protocol.HeartbeatMessage),
    ("scheduling/logs.py", "chunk", protocol.LogChunk),
    ("runtimed/payload.py", "payload", protocol.ExecutePayload),
    ("runtimed/payload.py", "run", protocol.RunIdentity),
    ("runtimed/cleanup.py", "payload", protocol.DeleteWorkspacePayload),
]


@pytest.mark.parametrize("module, variable, message_type", READERS)
def test_every_key_read_from_a_message_is_in_the_protocol(module, variable, message_type):
    read = reads(ROOT / module, variable)
    assert read, f"the scan found no read of {variable} in {module}"  # the scan itself works
    assert read <= keys(message_type), sorted(read - keys(message_type))


@pytest.mark.django_db
def test_the_payload_the_control_plane_sends_has_exactly_the_protocol_keys():
    from runtimed.payload import parse
    from scheduling import dispatch
    from tests.helpers.records import make_run, make_runtime

    make_runtime()
    run = make_run("r", source={"inline": "echo hi"})
    run.assigned_pod, run.assigned_pod_uid = "pod-a", "uid-a"
    sent = dispatch.payload(run, {"type": "filesystem"})
    # a Run without a workspace: every key but the optional workspace, as before
    assert set(sent) == required_keys(protocol.ExecutePayload)
    assert keys(protocol.ExecutePayload) - set(sent) == {"workspace"}
    assert set(sent["run"]) == keys(protocol.RunIdentity)
    assert set(sent["pod"]) == keys(protocol.PodIdentity)
    assert set(dispatch.identity(run)) == keys(protocol.Identity)
    assert set(dispatch.cancel_payload(run)) == required_keys(protocol.CancelPayload)
    parsed = parse(sent)  # and runtimed reads it back whole
    assert (parsed.run.namespace, parsed.run.name, parsed.pod_name) == ("default", "r", "pod-a")
    assert parsed.workspace is None


@pytest.mark.django_db
def test_a_run_with_a_workspace_sends_its_name_to_execute_and_cancel():
    from runtimed.payload import parse
    from scheduling import dispatch
    from tests.helpers.records import make_run, make_runtime
    from tests.helpers.workspaces import make_workspace

    make_runtime()
    make_workspace("shared.data")
    run = make_run("r", source={"inline": "echo hi"}, workspace={"name": "shared.data"})
    run.assigned_pod, run.assigned_pod_uid = "pod-a", "uid-a"
    sent = dispatch.payload(run, None)
    assert set(sent) == keys(protocol.ExecutePayload)
    assert sent["workspace"] == {"name": "shared.data"}
    assert set(sent["workspace"]) == keys(protocol.WorkspaceRef)
    cancel = dispatch.cancel_payload(run)
    assert set(cancel) == keys(protocol.CancelPayload)
    assert cancel["workspace"] == {"name": "shared.data"}
    assert parse(sent).workspace == "shared.data"  # runtimed reads it back


def test_runtimed_sends_a_report_of_the_protocol_keys():
    from runtimed.reporting import run_report

    report = run_report(
        namespace="ns",
        name="r",
        uid="u",
        attempt=1,
        pod_name="p",
        pod_uid="pu",
        phase="Succeeded",
        outputs={"a": "b"},
        artifact_refs=[],
        artifact_store={"type": "filesystem"},
    )
    assert set(report) <= keys(protocol.RunReport)
    assert keys(protocol.RunReport) - set(report) <= {"artifactRefs", "log"}


def test_runtimed_confirms_a_deleted_workspace_with_the_protocol_keys(tmp_path):
    from runtimed.cleanup import WorkspaceCleaner
    from runtimed.config import PodConfig
    from runtimed.persistent import WorkspaceUse
    from tests.helpers.payloads import FakeReporter

    config = PodConfig("pod-a", "uid-a", "ns", "bash", tmp_path)
    reporter = FakeReporter()
    request = {
        "namespace": "ns",
        "name": "w",
        "uid": "ws-uid",
        "pod": {"name": "pod-a", "uid": "uid-a"},
    }
    assert set(request) == keys(protocol.DeleteWorkspacePayload)
    assert WorkspaceCleaner(config, reporter, WorkspaceUse()).delete(request)
    [(name, kwargs)] = reporter.sent
    assert name == protocol.WORKSPACE_DELETED_TASK
    assert set(kwargs) == {"payload"}
    assert set(kwargs["payload"]) == keys(protocol.WorkspaceDeleted)


# ------------------------------------------------------------------------ the words of a report
REASONS_NOT_PHASES = sorted(
    protocol.Reason.ALL - {protocol.Reason.TIMEOUT, protocol.Reason.CANCELLED}
)


def test_no_source_file_but_the_protocol_spells_a_reason_of_an_attempt():
    # both sides name a reason through protocol.Reason, so a reason runtimed reports and the
    # one the control plane retries or counts cannot drift apart (a Job's reasons are its own)
    quoted = re.compile("|".join(re.escape(f'"{reason}"') for reason in REASONS_NOT_PHASES))
    offenders = []
    for package in ("portal", "scheduling", "runtimed", "workspaces", "workflows"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "runtimed" / "protocol.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if quoted.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}")
    assert offenders == []


def test_a_runs_phases_include_every_phase_a_report_names():
    from scheduling.models import RunPhase

    reported = {v for k, v in vars(protocol.Phase).items() if k.isupper() and isinstance(v, str)}
    assert reported <= set(RunPhase.values)


def test_the_retry_classes_are_the_protocols():
    from scheduling import retry

    lost = protocol.Reason.LOST
    assert all(retry.is_retryable({}, reason) for reason in lost)
    assert retry.is_retryable({}, protocol.Reason.RUNTIME_ERROR)
    assert not retry.is_retryable({}, protocol.Reason.RUNTIME_EXECUTE)  # the step's own failure
    listed = {"retryPolicy": {"retryableReasons": sorted(protocol.Reason.ALL)}}
    never = {r for r in protocol.Reason.ALL if not retry.is_retryable(listed, r)}
    assert never == protocol.Reason.NEVER_RETRIED


def test_every_reason_is_a_metric_label_of_its_own():
    from scheduling import metrics

    assert {metrics.attempt_reason(reason) for reason in protocol.Reason.ALL} == set(
        protocol.Reason.ALL
    )
