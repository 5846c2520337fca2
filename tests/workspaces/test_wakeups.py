"""What wakes the workspace controller: each event puts the namespace on its work queue (one
key however often it is woken); beat's pass puts every namespace with workspaces there; the
handler binds the namespace's workspaces."""

from __future__ import annotations

import pytest

from portal.models import WorkItem
from scheduling import pod_writer
from scheduling.models import RuntimePod
from tests.helpers.records import make_pod, make_runtime
from tests.helpers.workspaces import make_namespace, make_workspace
from workspaces import tasks, triggers
from workspaces.models import PersistentWorkspace

pytestmark = pytest.mark.django_db


def queued() -> list[str]:
    return sorted(WorkItem.objects.filter(queue=triggers.QUEUE).values_list("key", flat=True))


def test_a_workspace_written_queues_its_namespace_once():
    make_runtime()
    make_workspace("a")
    make_workspace("b")
    assert queued() == ["default"]


def test_a_pod_changed_queues_its_namespace():
    make_namespace("other")
    make_runtime()
    make_runtime(namespace="other")
    make_workspace("a")
    make_workspace("b", namespace="other")
    WorkItem.objects.all().delete()
    pod = make_pod("bash-a", namespace="other")
    assert queued() == ["other"]
    WorkItem.objects.all().delete()
    pod_writer.update_where(RuntimePod.objects.filter(pk=pod.pk), ready=False)
    assert queued() == ["other"]


def test_the_resync_queues_every_namespace_with_workspaces():
    make_runtime()
    make_workspace("a")
    WorkItem.objects.all().delete()
    assert tasks.reconcile() == 1
    assert queued() == ["default"]


def test_the_handler_binds_the_workspaces_of_its_namespace():
    make_runtime()
    make_pod("bash-a")
    make_workspace("a")
    tasks.reconcile_namespace("default")
    assert PersistentWorkspace.objects.get(name="a").bound_pod == "bash-a"


def test_the_controller_s_own_status_write_does_not_wake_it_again():
    make_runtime()
    make_pod("bash-a")
    make_workspace("a")
    WorkItem.objects.all().delete()
    tasks.reconcile_namespace("default")  # binds it: a status write
    assert PersistentWorkspace.objects.get(name="a").bound_pod == "bash-a"
    assert queued() == []
