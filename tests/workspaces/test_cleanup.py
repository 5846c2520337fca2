"""The cleanup protocol, seed 002 steps 1-5: use tracking, the TTL, Released, the bound pod's
runtimed deleting the bytes, and a gone pod's workspace released without waiting."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.machinery.conditions import format_time
from runtimed import protocol
from scheduling import run_status
from scheduling.models import Run, RunPhase
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RecordingApp, make_pod, make_run, make_runtime
from tests.helpers.workspaces import WORKSPACES, fresh_workspace, make_workspace
from workspaces import binding, cleanup, triggers
from workspaces.models import WORKSPACE_CLEANUP, PersistentWorkspace, WorkspacePhase
from workspaces.status import condition

pytestmark = pytest.mark.django_db


@pytest.fixture
def pod():
    make_runtime()
    return make_pod("bash-a")


def bound(name="ws", **spec):
    ws = make_workspace(name, **spec)
    binding.reconcile(fresh_workspace(ws), timezone.now())
    ws = fresh_workspace(ws)
    assert ws.phase == WorkspacePhase.BOUND
    return ws


def uses(name, ws, phase=RunPhase.RUNNING, ended=None):
    run = make_run(name, workspace={"name": ws.name})
    status = {**run.status, "phase": phase}
    if ended is not None:
        status["completionTime"] = format_time(ended)
    Run.objects.filter(pk=run.pk).update(
        status=status, **Run.status_columns(status), resource_version=run.resource_version + 1
    )
    return Run.objects.get(pk=run.pk)


def finish(run, ended):
    status = {**run.status, "phase": "Succeeded", "completionTime": format_time(ended)}
    assert run_status.write(run, status, run_status.ANY)


def reconcile(now=None, app=None):
    app = app or RecordingApp()
    now = now or timezone.now()
    for namespace in triggers.namespaces():  # what beat's resync has reconciled
        binding.reconcile_namespace(namespace, now)
    return cleanup.reconcile(now, app=app), app


def test_step_1_last_used_is_set_once_when_the_last_active_run_ends(pod):
    ws = bound()
    first, second = uses("a", ws), uses("b", ws)
    t1 = timezone.now().replace(microsecond=0) - timedelta(seconds=30)
    finish(first, t1)
    reconcile()
    assert fresh_workspace(ws).last_used is None  # b still uses it
    t2 = t1 + timedelta(seconds=10)
    finish(second, t2)
    counts, _ = reconcile()
    assert counts["used"] == 1
    ws = fresh_workspace(ws)
    assert ws.status["lastUsedTime"] == format_time(t2)
    version = ws.resource_version
    assert reconcile()[0]["used"] == 0  # once
    assert fresh_workspace(ws).resource_version == version


def test_step_1_last_used_never_moves_back_when_runs_are_deleted(pod):
    ws = bound()
    old, new = uses("a", ws), uses("b", ws)
    now = timezone.now().replace(microsecond=0)
    finish(old, now - timedelta(seconds=60))
    finish(new, now - timedelta(seconds=5))
    reconcile()
    Run.objects.filter(name="b").delete()
    reconcile()
    assert fresh_workspace(ws).status["lastUsedTime"] == format_time(now - timedelta(seconds=5))


def test_step_1_a_fresh_bound_workspace_counts_its_unused_time_from_binding(pod):
    ws = bound(ttlSecondsAfterUnused=60)
    since = cleanup.bound_since(ws)
    assert since is not None
    reconcile(since + timedelta(seconds=59))
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND
    reconcile(since + timedelta(seconds=61))
    assert fresh_workspace(ws).phase == WorkspacePhase.RELEASED


def test_step_2_the_ttl_counts_from_last_use(pod):
    ws = bound(ttlSecondsAfterUnused=60)
    ended = timezone.now().replace(microsecond=0) + timedelta(seconds=120)
    run = uses("a", ws)
    finish(run, ended)
    reconcile(ended + timedelta(seconds=30))
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND
    reconcile(ended + timedelta(seconds=61))
    assert fresh_workspace(ws).phase == WorkspacePhase.RELEASED


def test_step_2_an_active_run_holds_the_workspace_even_when_pending(pod):
    ws = bound(ttlSecondsAfterUnused=0)
    uses("waiting", ws, phase=RunPhase.PENDING)
    reconcile(timezone.now() + timedelta(days=1))
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND


@pytest.mark.parametrize(
    "spec",
    [{}, {"cleanupPolicy": "Retain", "ttlSecondsAfterUnused": 0}, {"cleanupPolicy": "Retain"}],
    ids=["no-ttl", "retain-with-ttl", "retain"],
)
def test_step_2_no_ttl_or_retain_never_starts_cleanup(pod, spec):
    ws = bound(**spec)
    reconcile(timezone.now() + timedelta(days=365))
    ws = fresh_workspace(ws)
    assert ws.phase == WorkspacePhase.BOUND
    assert ws.deletion_timestamp is None


def test_step_3_expiry_releases_then_requests_deletion_under_the_finalizer(pod):
    ws = bound(ttlSecondsAfterUnused=0)
    counts, _ = reconcile(timezone.now() + timedelta(seconds=1))
    assert counts["released"] == 1
    ws = fresh_workspace(ws)
    assert ws is not None  # held by the finalizer
    assert ws.phase == WorkspacePhase.RELEASED
    assert ws.deletion_timestamp is not None
    assert WORKSPACE_CLEANUP in ws.finalizers
    cleanup_condition = condition(ws.status, "Cleanup")
    assert (cleanup_condition["status"], cleanup_condition["reason"]) == ("True", "TTLExpired")


def test_step_4_the_bound_pod_is_asked_until_it_answers_then_the_finalizer_goes(pod):
    ws = bound(ttlSecondsAfterUnused=0)
    later = timezone.now() + timedelta(seconds=1)
    reconcile(later)
    _, app = reconcile(later)
    _, again = reconcile(later)
    for sent in (app.sent, again.sent):
        assert sent == [
            (
                protocol.DELETE_WORKSPACE_TASK,
                {
                    "payload": {
                        "namespace": "default",
                        "name": "ws",
                        "uid": str(ws.uid),
                        "pod": {"name": "bash-a", "uid": str(pod.uid)},
                    }
                },
                protocol.pod_queue("bash-a"),
            )
        ]
    reply = {
        "namespace": "default",
        "name": "ws",
        "uid": str(ws.uid),
        "podName": "bash-a",
        "podUID": str(pod.uid),
    }
    assert cleanup.confirm_deleted(reply) is True
    assert fresh_workspace(ws) is None


@pytest.mark.parametrize(
    "forged",
    [{"podUID": "someone-else"}, {"podName": "bash-b"}, {"uid": str(uuid.uuid4())}],
    ids=["pod-uid", "pod-name", "workspace-uid"],
)
def test_step_4_a_reply_from_anyone_but_the_bound_pod_changes_nothing(pod, forged):
    ws = bound(ttlSecondsAfterUnused=0)
    reconcile(timezone.now() + timedelta(seconds=1))
    reply = {
        "namespace": "default",
        "name": "ws",
        "uid": str(ws.uid),
        "podName": "bash-a",
        "podUID": str(pod.uid),
        **forged,
    }
    assert cleanup.confirm_deleted(reply) is False
    assert WORKSPACE_CLEANUP in fresh_workspace(ws).finalizers


def test_step_4_a_reply_for_a_workspace_not_being_deleted_changes_nothing(pod):
    ws = bound()
    reply = {
        "namespace": "default",
        "name": "ws",
        "uid": str(ws.uid),
        "podName": "bash-a",
        "podUID": str(pod.uid),
    }
    assert cleanup.confirm_deleted(reply) is False
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND


def test_step_4_a_pod_that_is_not_ready_is_still_asked_and_the_object_waits(pod):
    from scheduling.models import RuntimePod

    ws = bound(ttlSecondsAfterUnused=0)
    RuntimePod.objects.filter(pk=pod.pk).update(ready=False)
    later = timezone.now() + timedelta(seconds=1)
    reconcile(later)
    _, app = reconcile(later)
    assert len(app.sent) == 1
    assert fresh_workspace(ws).phase == WorkspacePhase.RELEASED


def test_step_4_the_pod_is_not_asked_while_a_bound_run_using_it_has_not_ended(pod):
    ws = bound(cleanupPolicy="Retain")
    running = uses("running", ws, phase=RunPhase.SCHEDULED)
    store.delete(WORKSPACES, "default", "ws", context=OPERATOR)
    _, app = reconcile()
    assert fresh_workspace(ws).phase == WorkspacePhase.RELEASED
    assert app.sent == []
    finish(running, timezone.now())
    _, app = reconcile()
    assert [name for name, _, _ in app.sent] == [protocol.DELETE_WORKSPACE_TASK]


def test_step_5_a_gone_pods_workspace_is_released_without_waiting(pod):
    ws = bound(ttlSecondsAfterUnused=0)
    later = timezone.now() + timedelta(seconds=1)
    reconcile(later)
    pod.delete()
    _, app = reconcile(later)
    assert app.sent == []
    assert fresh_workspace(ws) is None


def test_an_explicit_delete_of_a_retained_workspace_follows_the_same_protocol(pod):
    ws = bound(cleanupPolicy="Retain")
    store.delete(WORKSPACES, "default", "ws", context=OPERATOR)
    _, app = reconcile()
    ws = fresh_workspace(ws)
    assert ws.phase == WorkspacePhase.RELEASED
    assert condition(ws.status, "Cleanup")["reason"] == "Deleted"
    assert [name for name, _, _ in app.sent] == [protocol.DELETE_WORKSPACE_TASK]


def test_a_never_bound_workspace_is_deleted_at_once():
    ws = make_workspace(runtime="nowhere")
    store.delete(WORKSPACES, "default", "ws", context=OPERATOR)
    assert fresh_workspace(ws) is not None  # the finalizer holds it until the controller looks
    _, app = reconcile()
    assert app.sent == []
    assert not PersistentWorkspace.objects.filter(pk=ws.pk).exists()


def test_the_controller_writes_as_its_own_identity_with_only_its_rules():
    from portal.auth.identities import CONTROLLERS_GROUP

    user = cleanup.WORKSPACE_CONTROLLER.user
    assert user.username == "system:kruntimes:workspace-controller"
    assert CONTROLLERS_GROUP in user.groups
