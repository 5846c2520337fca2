"""What a gone pod's runtimed recorded is found wherever its Runs' directories are: under the
pod's workspace, under each of its persistent workspaces, and in its outbox."""

from __future__ import annotations

import pytest

from runtimed.config import PodConfig
from runtimed.outbox import Outbox
from runtimed.protocol import OUTBOX_DIR
from runtimed.tasks import ActiveRuns, RunService
from scheduling import recovery
from tests.helpers.payloads import FakeReporter, TickingClock, make_payload


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "pod"
    path.mkdir()
    return path


@pytest.fixture
def service(workspace) -> RunService:
    """A pod's runtimed, recording on ``workspace`` as the real one does."""
    return RunService(
        PodConfig("pod-a", "uid-pod-a", "ci", "bash", workspace),
        FakeReporter(),
        clock=TickingClock(),
        active=ActiveRuns(Outbox(workspace / OUTBOX_DIR)),
        ship_logs=False,
    )


def test_reports_of_runs_in_persistent_workspaces_are_found(service, workspace):
    finals = [
        service.execute_run(make_payload("exit 0", uid="in-pod")),
        service.execute_run(make_payload("exit 1", uid="in-a", workspace={"name": "a"})),
        service.execute_run(make_payload("exit 0", uid="in-b", workspace={"name": "b.c"})),
    ]
    for path in (workspace / OUTBOX_DIR).iterdir():  # confirmed: only the run dirs keep them
        path.unlink()
    found = recovery.recorded_reports(workspace)
    assert sorted(found, key=lambda r: r["uid"]) == sorted(finals, key=lambda r: r["uid"])


def test_each_attempt_is_found_once(service, workspace):
    final = service.execute_run(make_payload("exit 0", uid="in-a", workspace={"name": "a"}))
    assert recovery.recorded_reports(workspace) == [final]  # run dir and outbox: once
