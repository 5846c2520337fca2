"""The Workspace filter (seed 002): a Run that uses a PersistentWorkspace goes only to the bound
pod, by name AND uid; every other workspace state leaves it Pending with a clear message."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling import metrics
from scheduling.models import RuntimePod
from scheduling.scheduler import default_framework, run_pass
from scheduling.scheduler.snapshot import WorkspaceState
from tests.helpers.records import fresh, make_pod, make_run, make_runtime
from tests.helpers.snapshots import pod, run, snapshot
from tests.helpers.workspaces import fresh_workspace, make_workspace
from workspaces import binding
from workspaces import status as workspace_status

BOUND = WorkspaceState("bash", "Bound", "bash-b", "uid-bash-b")


def decide(state: WorkspaceState | None, pods=None, **run_args):
    pods = pods or [pod("bash-a"), pod("bash-b"), pod("bash-c")]
    workspaces = {} if state is None else {("default", "ws"): state}
    return default_framework().schedule_one(
        run(workspace="ws", **run_args), snapshot(pods, workspaces=workspaces)
    )


def test_a_bound_workspace_admits_only_its_pod():
    assert decide(BOUND).pod.name == "bash-b"


def test_the_same_pod_name_with_another_uid_is_not_the_bound_pod():
    stale = WorkspaceState("bash", "Bound", "bash-b", "uid-of-the-old-bash-b")
    decision = decide(stale)
    assert decision.pod is None
    assert decision.verdict is None
    assert "3 are not the workspace's bound pod (name and UID)" in decision.message


def test_a_bound_pod_that_is_not_ready_leaves_the_run_pending():
    decision = decide(BOUND, pods=[pod("bash-a"), pod("bash-b", ready=False)])
    assert decision.pod is None
    assert "1 is not ready" in decision.message
    assert "1 is not the workspace's bound pod" in decision.message


@pytest.mark.parametrize(
    ("state", "reason", "fragment"),
    [
        (None, "WorkspaceNotFound", 'PersistentWorkspace "ws" not found in namespace "default"'),
        (
            WorkspaceState("python", "Bound", "bash-b", "uid-bash-b"),
            "WorkspaceRuntimeMismatch",
            'belongs to Runtime "python", not "bash"',
        ),
        (WorkspaceState("bash", "Pending"), "WorkspacePending", "to be bound to a Runtime Pod"),
        (WorkspaceState("bash", "Lost", "bash-b", "uid-bash-b"), "WorkspaceLost", "is Lost"),
        (
            WorkspaceState("bash", "Released", "bash-b", "uid-bash-b"),
            "WorkspaceReleased",
            "is Released: no new Run may use it",
        ),
        (
            WorkspaceState("bash", "Bound", "bash-b", "uid-bash-b", deleting=True),
            "WorkspaceReleased",
            "is Released",
        ),
    ],
    ids=["missing", "other-runtime", "pending", "lost", "released", "deleting"],
)
def test_an_unusable_workspace_leaves_the_run_pending_not_failed(state, reason, fragment):
    decision = decide(state)
    assert decision.pod is None
    assert decision.verdict is not None
    assert (decision.verdict.reason, decision.verdict.fatal) == (reason, False)
    assert fragment in decision.message


def test_a_run_without_a_workspace_is_not_fenced():
    decision = default_framework().schedule_one(
        run(), snapshot([pod("bash-a")], workspaces={("default", "ws"): BOUND})
    )
    assert decision.pod.name == "bash-a"


@pytest.mark.django_db
def test_in_a_pass_the_run_waits_pending_then_binds_once_the_workspace_is_bound():
    make_runtime()
    ws = make_workspace()
    r = make_run("r1", workspace={"name": "ws"})
    run_pass(default_framework(), timezone.now())
    r = fresh(r)
    assert r.phase == "Pending"
    assert 'waiting for PersistentWorkspace "ws"' in r.status["message"]
    make_pod("bash-a")
    target = make_pod("bash-b")
    # bind to bash-b whatever the hash says: the fencing, not the pick, is under test
    ws = fresh_workspace(ws)
    workspace_status.write(
        ws, workspace_status.bound(ws.status, ws, "bash-b", str(target.uid), timezone.now())
    )
    run_pass(default_framework(), timezone.now())
    r = fresh(r)
    assert (r.phase, r.assigned_pod, r.assigned_pod_uid) == ("Scheduled", "bash-b", str(target.uid))


@pytest.mark.django_db
def test_a_lost_workspace_keeps_its_runs_pending_with_a_message():
    make_runtime()
    pod_row = make_pod("bash-a")
    ws = make_workspace()
    binding.reconcile(fresh_workspace(ws), timezone.now())
    RuntimePod.objects.filter(pk=pod_row.pk).delete()
    binding.reconcile(fresh_workspace(ws), timezone.now())
    make_pod("bash-b")
    r = make_run("r1", workspace={"name": "ws"})
    run_pass(default_framework(), timezone.now())
    r = fresh(r)
    assert r.phase == "Pending"
    assert "is Lost" in r.status["message"]


@pytest.mark.django_db
def test_a_workspace_change_requeues_the_runs_that_wait_on_it():
    make_runtime()
    make_pod("bash-a")
    ws = make_workspace()
    before = metrics.WAKEUPS.labels("workspace")._value.get()
    binding.reconcile(fresh_workspace(ws), timezone.now())  # Pending -> Bound
    assert metrics.WAKEUPS.labels("workspace")._value.get() == before + 1


@pytest.mark.django_db
def test_the_workspaces_of_a_page_are_read_in_one_query():
    make_runtime()
    make_pod("bash-a", runs=100)
    names = [f"ws-{i}" for i in range(10)]
    for name in names:
        make_workspace(name)
    for i in range(30):
        make_run(f"r{i}", workspace={"name": names[i % 10]})
    with CaptureQueriesContext(connection) as queries:
        run_pass(default_framework(), timezone.now())
    reads = [q["sql"] for q in queries if 'FROM "workspaces_persistentworkspace"' in q["sql"]]
    assert len(reads) == 1
