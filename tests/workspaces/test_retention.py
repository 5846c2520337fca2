"""Retain means retain (issue 27, item 8): a Runtime whose pods hold a ``Retain`` workspace's
data waits behind ``kruntimes.io/retained-workspaces`` when deleted, says so in a
``RetainedWorkspaces`` condition, keeps its pods, and goes once each such workspace is
deleted. ``DeleteAfterTTL`` workspaces never hold it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.machinery.registry import registry
from portal.processes import Supervisor
from scheduling.models import RETAINED_WORKSPACES, Runtime, RuntimePod, runtimes_with_pods
from scheduling.providers import local
from scheduling.providers.kubernetes import KubernetesProvider
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RecordingApp, make_pod, make_runtime
from tests.helpers.workspaces import WORKSPACES, fresh_workspace, make_workspace
from workspaces import binding, cleanup, retention, triggers
from workspaces.models import PersistentWorkspace, WorkspacePhase
from workspaces.status import condition

pytestmark = pytest.mark.django_db

RUNTIMES = registry.for_model(Runtime)


@pytest.fixture
def pod() -> RuntimePod:
    make_runtime()
    return make_pod("bash-a")


def bound(name: str = "ws", **spec) -> PersistentWorkspace:
    ws = make_workspace(name, **spec)
    binding.reconcile(fresh_workspace(ws), timezone.now())
    ws = fresh_workspace(ws)
    assert ws.phase == WorkspacePhase.BOUND
    return ws


def reconcile() -> None:
    """One pass of the workspace controller over ``default`` (binding, cleanup, retention)."""
    now = timezone.now()
    binding.reconcile_namespace("default", now)
    cleanup.reconcile(now, "default", app=RecordingApp())
    retention.reconcile_namespace("default", now)


def runtime() -> Runtime | None:
    return Runtime.objects.filter(namespace="default", name="bash").first()


def retained_condition() -> dict:
    found = runtime()
    assert found is not None
    return condition(found.status, retention.CONDITION)


def delete_runtime() -> bool:
    _, gone = store.delete(RUNTIMES, "default", "bash", context=OPERATOR)
    return gone


def delete_workspace(ws: PersistentWorkspace, pod: RuntimePod) -> None:
    """An explicit deletion, through the cleanup protocol: Released, then the bound pod's
    runtimed deletes the bytes and confirms."""
    store.delete(WORKSPACES, "default", ws.name, context=OPERATOR)
    reconcile()
    assert fresh_workspace(ws).phase == WorkspacePhase.RELEASED
    reply = {"namespace": "default", "name": ws.name, "uid": str(ws.uid)}
    assert cleanup.confirm_deleted({**reply, "podName": pod.name, "podUID": str(pod.uid)})
    assert fresh_workspace(ws) is None


# ------------------------------------------------------------------ while the Runtime lives


def test_a_runtime_holding_a_retain_workspace_carries_the_finalizer_and_says_so(pod):
    bound("ws", cleanupPolicy="Retain")
    bound("ws2", cleanupPolicy="Retain")

    reconcile()

    assert RETAINED_WORKSPACES in runtime().finalizers
    found = retained_condition()
    assert (found["status"], found["reason"]) == ("True", "RetainsWorkspaces")
    assert "ws, ws2" in found["message"]


def test_delete_policy_workspaces_do_not_hold_it(pod):
    bound("ttl", cleanupPolicy="DeleteAfterTTL", ttlSecondsAfterUnused=3600)
    bound("default-policy")

    reconcile()

    assert RETAINED_WORKSPACES not in runtime().finalizers
    assert retained_condition() == {}
    assert delete_runtime() is True
    assert runtime() is None
    assert not runtimes_with_pods().exists()


def test_a_pending_or_lost_retain_workspace_holds_nothing():
    make_runtime()
    make_workspace("pending", cleanupPolicy="Retain")
    reconcile()
    assert RETAINED_WORKSPACES not in runtime().finalizers

    pod = make_pod("bash-a")
    reconcile()
    assert RETAINED_WORKSPACES in runtime().finalizers
    RuntimePod.objects.filter(pk=pod.pk).delete()
    reconcile()  # the pod is gone: Lost, no data left to keep

    assert fresh_workspace(PersistentWorkspace.objects.get()).phase == WorkspacePhase.LOST
    assert RETAINED_WORKSPACES not in runtime().finalizers
    assert retained_condition()["reason"] == "NoRetainedWorkspaces"


# ------------------------------------------------------------------ deleting the Runtime


def test_deleting_it_waits_behind_the_finalizer_with_its_data_kept(pod):
    ws = bound("ws", cleanupPolicy="Retain")
    reconcile()

    assert delete_runtime() is False
    reconcile()
    reconcile()

    held = runtime()
    assert held is not None and held.deletion_timestamp is not None
    assert held.finalizers == [RETAINED_WORKSPACES]
    found = retained_condition()
    assert (found["status"], found["reason"]) == ("True", "WaitingForRetainedWorkspaces")
    assert "ws" in found["message"]
    # the pods stay: the workspace stays Bound to the same pod, its data where it was
    assert list(runtimes_with_pods()) == [held]
    ws = fresh_workspace(ws)
    assert (ws.phase, ws.bound_pod_uid) == (WorkspacePhase.BOUND, str(pod.uid))


def test_the_providers_keep_the_pods_of_a_runtime_waiting_for_its_workspaces(pod):
    make_runtime("other")
    bound("ws", cleanupPolicy="Retain")
    reconcile()
    store.delete(RUNTIMES, "default", "other", context=OPERATOR)
    delete_runtime()

    provider = local.LocalProvider(Supervisor([], stop_timeout=5))
    assert provider.desired() == {("default", "bash", 0)}
    kube = KubernetesProvider(api=object(), request_timeout=1, watch_seconds=1)
    assert [(ns, name) for ns, name, _, _ in kube.runtimes()] == [("default", "bash")]


def test_the_runtime_goes_once_each_retain_workspace_is_deleted(pod):
    first = bound("ws", cleanupPolicy="Retain")
    second = bound("ws2", cleanupPolicy="Retain")
    reconcile()
    delete_runtime()

    delete_workspace(first, pod)
    reconcile()
    assert runtime() is not None
    assert "ws2" in retained_condition()["message"]
    assert "ws," not in retained_condition()["message"]

    delete_workspace(second, pod)
    reconcile()

    assert runtime() is None
    assert not runtimes_with_pods().exists()
    assert local.LocalProvider(Supervisor([], stop_timeout=5)).desired() == set()


def test_a_live_runtime_lets_go_of_the_finalizer_when_its_workspaces_are_deleted(pod):
    ws = bound("ws", cleanupPolicy="Retain")
    reconcile()

    delete_workspace(ws, pod)
    reconcile()

    assert RETAINED_WORKSPACES not in runtime().finalizers
    assert retained_condition()["status"] == "False"
    assert delete_runtime() is True


def test_nothing_new_binds_to_a_runtime_being_deleted(pod):
    bound("ws", cleanupPolicy="Retain")
    reconcile()
    delete_runtime()

    late = make_workspace("late", cleanupPolicy="Retain")
    reconcile()

    late = fresh_workspace(late)
    assert late.phase == WorkspacePhase.PENDING
    assert condition(late.status, "Bound")["reason"] == "RuntimeTerminating"
    assert "late" not in retained_condition()["message"]


def test_deleting_a_runtime_and_a_workspace_wake_the_controller(pod, monkeypatch):
    woken: list[str | None] = []
    monkeypatch.setattr(triggers, "request_reconcile", woken.append)
    ws = bound("ws", cleanupPolicy="Retain")
    reconcile()
    woken.clear()

    delete_runtime()
    assert woken == ["default"]
    triggers.on_workspace_change(ws, "DELETED")
    assert woken == ["default", "default"]
