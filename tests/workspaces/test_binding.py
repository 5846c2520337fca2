"""The RuntimePodLocal binding lifecycle, seed 002 rules 1-5: wait, pick, record, stay, Lost."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from django.utils import timezone

from portal.models import Event
from scheduling.models import RuntimePod
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import fresh, make_pod, make_run, make_runtime
from tests.helpers.workspaces import fresh_workspace, make_workspace
from workspaces import binding
from workspaces.binding import Pod, pick
from workspaces.models import WorkspacePhase
from workspaces.status import condition

pytestmark = pytest.mark.django_db


def reconcile(ws):
    ws = fresh_workspace(ws)
    binding.reconcile(ws, timezone.now())
    return fresh_workspace(ws)


def test_rule_1_without_a_ready_pod_the_workspace_waits():
    make_runtime()
    make_pod("bash-a", ready=False)
    ws = reconcile(make_workspace())
    assert ws.phase == WorkspacePhase.PENDING
    assert ws.status["runtime"] == "bash"
    bound = condition(ws.status, "Bound")
    assert (bound["status"], bound["reason"]) == ("False", "WaitingForRuntimePod")
    assert "boundPod" not in ws.status


def test_rule_1_a_missing_runtime_is_named():
    ws = reconcile(make_workspace(runtime="nope"))
    assert ws.phase == WorkspacePhase.PENDING
    assert condition(ws.status, "Bound")["reason"] == "RuntimeNotFound"
    assert 'Runtime "nope" not found' in condition(ws.status, "Bound")["message"]


def test_rule_1_a_bound_workspace_reserves_no_capacity():
    make_runtime()
    make_pod("bash-a", runs=1)
    ws = reconcile(make_workspace())
    assert ws.phase == WorkspacePhase.BOUND
    run = make_run("plain")  # no workspace: the pod's one slot is still free
    run_pass(default_framework(), timezone.now())
    assert fresh(run).assigned_pod == "bash-a"


def test_rule_2_the_pick_is_stable_and_independent_of_order():
    pods = [Pod(f"bash-{c}", f"uid-{c}", True) for c in "dacb"]
    uid = str(uuid.uuid4())
    first = pick(uid, pods)
    assert pick(uid, list(reversed(pods))) == first
    assert pick(uid, sorted(pods, key=lambda p: p.name)) == first


def test_rule_2_many_workspaces_spread_over_the_ready_pods():
    pods = [Pod(f"bash-{i}", f"uid-{i}", True) for i in range(4)]
    chosen = Counter(pick(str(uuid.uuid4()), pods).name for _ in range(400))
    assert set(chosen) == {p.name for p in pods}
    assert min(chosen.values()) > 50


def test_rule_2_only_ready_running_pods_are_candidates():
    make_runtime()
    make_pod("bash-a", ready=False)
    terminating = make_pod("bash-b")
    RuntimePod.objects.filter(pk=terminating.pk).update(phase="Terminating")
    ready = make_pod("bash-c")
    for name in ("w1", "w2", "w3", "w4", "w5"):
        ws = reconcile(make_workspace(name))
        assert (ws.phase, ws.bound_pod) == (WorkspacePhase.BOUND, ready.name)


def test_rule_3_bound_records_runtime_pod_uid_and_path_and_makes_no_directory(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    make_runtime()
    pod = make_pod("bash-a")
    ws = reconcile(make_workspace("ci-build"))
    assert ws.status["phase"] == "Bound"
    assert ws.status["runtime"] == "bash"
    assert ws.status["boundPod"] == "bash-a"
    assert ws.status["boundPodUID"] == str(pod.uid)
    assert ws.status["path"] == "/workspace/persistent/ci-build"
    assert (ws.bound_pod, ws.bound_pod_uid) == ("bash-a", str(pod.uid))
    assert condition(ws.status, "Bound")["reason"] == "BoundToRuntimePod"
    assert list(tmp_path.iterdir()) == []


def test_rule_3_the_binding_does_not_move_when_more_pods_arrive():
    make_runtime()
    make_pod("bash-m")
    ws = reconcile(make_workspace())
    for name in ("bash-a", "bash-b", "bash-z"):
        make_pod(name)
    assert reconcile(ws).bound_pod == "bash-m"


def test_rule_4_a_bound_workspace_stays_bound_while_its_pod_is_not_ready():
    make_runtime()
    pod = make_pod("bash-a")
    ws = reconcile(make_workspace())
    RuntimePod.objects.filter(pk=pod.pk).update(ready=False)
    make_pod("bash-b")  # a ready pod elsewhere changes nothing
    ws = reconcile(ws)
    assert (ws.phase, ws.bound_pod) == (WorkspacePhase.BOUND, "bash-a")
    ready = condition(ws.status, "PodReady")
    assert (ready["status"], ready["reason"]) == ("False", "RuntimePodNotReady")
    RuntimePod.objects.filter(pk=pod.pk).update(ready=True)
    assert condition(reconcile(ws).status, "PodReady")["status"] == "True"


def test_rule_5_a_deleted_pod_makes_the_workspace_lost_and_it_is_never_rebound():
    make_runtime()
    pod = make_pod("bash-a")
    ws = reconcile(make_workspace())
    pod.delete()
    make_pod("bash-b")
    ws = reconcile(ws)
    assert ws.phase == WorkspacePhase.LOST
    assert condition(ws.status, "Bound")["reason"] == "RuntimePodGone"
    assert ws.bound_pod == "bash-a"  # what it was bound to stays visible
    assert reconcile(ws).phase == WorkspacePhase.LOST  # never rebound to bash-b
    events = Event.objects.filter(involved_uid=str(ws.uid)).order_by("resource_version")
    assert [(e.reason, e.type, e.message) for e in events] == [
        ("Bound", "Normal", "bound to Runtime Pod bash-a"),
        ("Lost", "Warning", "lost its Runtime Pod bash-a (RuntimePodGone); it is never rebound"),
    ]


def test_rule_5_the_same_pod_name_with_another_uid_is_lost():
    make_runtime()
    pod = make_pod("bash-a")
    ws = reconcile(make_workspace())
    RuntimePod.objects.filter(pk=pod.pk).update(uid=uuid.uuid4())
    ws = reconcile(ws)
    assert ws.phase == WorkspacePhase.LOST
    assert condition(ws.status, "Bound")["reason"] == "RuntimePodReplaced"


def test_a_released_workspace_whose_pod_is_gone_is_lost():
    make_runtime()
    pod = make_pod("bash-a")
    ws = reconcile(make_workspace())
    from workspaces import status

    status.write(ws, status.released(ws.status, "Deleted", "gone", timezone.now(), 1))
    pod.delete()
    assert reconcile(ws).phase == WorkspacePhase.LOST


def test_an_unchanged_world_writes_nothing():
    make_runtime()
    make_pod("bash-a")
    ws = reconcile(make_workspace())
    version = ws.resource_version
    assert binding.reconcile(ws, timezone.now()) is False
    assert fresh_workspace(ws).resource_version == version


def test_a_pod_becoming_ready_binds_waiting_workspaces_through_the_signal(
    django_capture_on_commit_callbacks,
):
    from scheduling import tasks

    make_runtime()
    ws = make_workspace()
    pod = make_pod("bash-x", ready=False)  # its provider's row, not ready until runtimed beats
    with django_capture_on_commit_callbacks(execute=True):
        tasks.runtime_pod_heartbeat(
            {
                "namespace": "default",
                "runtime": "bash",
                "podName": "bash-x",
                "podUID": str(pod.uid),
                "sentAt": timezone.now().isoformat(),
                "activeRuns": [],
            }
        )
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND
