"""Pod objects as RuntimePod rows: readiness needs the Pod's Ready condition AND a fresh runtimed
heartbeat; a Pod deleted, ended or replaced under its name is gone (PodGone, workspace Lost)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.machinery.conditions import format_time
from scheduling import pods
from scheduling.models import RuntimePod
from scheduling.providers import kube_pods
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import fresh, make_run, make_runtime
from tests.helpers.workspaces import fresh_workspace, make_workspace
from workspaces.models import WorkspacePhase

pytestmark = pytest.mark.django_db


def pod_object(
    name: str = "runtime-bash-7d9f-abcde",
    uid: str | None = None,
    *,
    ready: bool = True,
    phase: str = "Running",
    deleting: bool = False,
    annotations: dict | None = None,
) -> dict:
    metadata: dict = {
        "name": name,
        "namespace": "default",
        "uid": uid or str(uuid.uuid4()),
        "labels": {"app.kubernetes.io/managed-by": "kruntimes-portal", "runtime": "bash"},
        "annotations": annotations or {},
    }
    if deleting:
        metadata["deletionTimestamp"] = format_time(timezone.now())
    return {
        "metadata": metadata,
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def apply(obj: dict) -> bool:
    return kube_pods.apply_pod(kube_pods.observed(obj), timezone.now())


def beat(obj: dict) -> tuple:
    m = obj["metadata"]
    message = {
        "namespace": "default",
        "runtime": "bash",
        "podName": m["name"],
        "podUID": m["uid"],
        "activeRuns": [],
        "time": format_time(timezone.now()),
    }
    return pods.record_heartbeat(message, timezone.now())


def row() -> RuntimePod:
    return RuntimePod.objects.get()


def test_a_pod_becomes_a_row_ready_only_once_runtimed_beats():
    make_runtime(capacity={"resources": {"runs": 3}})
    obj = pod_object(annotations={"kruntimes.io/capacity.runs": "5"})
    assert apply(obj)
    pod = row()
    assert (pod.name, str(pod.uid), pod.runtime, pod.provider) == (
        obj["metadata"]["name"],
        obj["metadata"]["uid"],
        "bash",
        "kubernetes",
    )
    assert (pod.phase, pod.pod_ready, pod.ready) == ("Running", True, False)
    assert pod.capacity == {"runs": 5} and pod.host == "node-1"
    assert pod.workspace_path == "/workspace"
    assert beat(obj)[1] and row().ready


def test_a_heartbeat_does_not_make_a_pod_ready_whose_ready_condition_is_false():
    make_runtime()
    obj = pod_object(ready=False)
    apply(obj)
    assert beat(obj) == (row(), False) and not row().ready
    apply(pod_object(obj["metadata"]["name"], obj["metadata"]["uid"], ready=True))
    assert row().ready  # heard from a moment ago: Ready now the condition is


def test_a_pod_losing_its_ready_condition_stops_being_ready():
    make_runtime()
    obj = pod_object()
    apply(obj)
    beat(obj)
    assert apply(pod_object(obj["metadata"]["name"], obj["metadata"]["uid"], ready=False))
    assert not row().ready and row().phase == "Running"


def test_a_silent_runtimed_keeps_a_ready_pod_not_ready():
    make_runtime()
    obj = pod_object()
    apply(obj)
    beat(obj)
    RuntimePod.objects.update(ready=False, last_heartbeat=timezone.now() - timedelta(seconds=30))
    apply(obj)
    assert not row().ready


@pytest.fixture
def busy_pod(django_capture_on_commit_callbacks):
    """A Ready pod with a Run bound to it and a workspace bound to it."""
    make_runtime()
    obj = pod_object()
    with django_capture_on_commit_callbacks(execute=True):
        apply(obj)
        beat(obj)
        ws = make_workspace("cache")
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    assert fresh(run).assigned_pod == obj["metadata"]["name"]
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND
    return obj, run, ws


def test_a_deleted_pod_fails_its_runs_pod_gone_and_loses_its_workspace(
    busy_pod, django_capture_on_commit_callbacks
):
    obj, run, ws = busy_pod
    m = obj["metadata"]
    with django_capture_on_commit_callbacks(execute=True):
        assert kube_pods.forget_pod("default", m["name"], m["uid"], timezone.now())
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodGone")
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    assert not RuntimePod.objects.exists()


def test_a_replacement_under_the_same_name_is_a_new_pod(
    busy_pod, django_capture_on_commit_callbacks
):
    obj, run, ws = busy_pod
    replacement = pod_object(obj["metadata"]["name"])  # a new UID
    with django_capture_on_commit_callbacks(execute=True):
        assert apply(replacement)
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodGone")
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    assert str(row().uid) == replacement["metadata"]["uid"] and not row().ready
    # the old incarnation's late DELETED changes nothing
    old = obj["metadata"]
    assert not kube_pods.forget_pod("default", old["name"], old["uid"], timezone.now())
    assert beat(obj) == (None, False)  # nor does its late heartbeat
    assert str(row().uid) == replacement["metadata"]["uid"]


def test_an_evicted_pod_is_gone(busy_pod, django_capture_on_commit_callbacks):
    obj, run, ws = busy_pod
    m = obj["metadata"]
    with django_capture_on_commit_callbacks(execute=True):
        assert apply(pod_object(m["name"], m["uid"], phase="Failed", ready=False))
    assert fresh(run).status["reason"] == "PodGone"
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    assert not RuntimePod.objects.exists()


def test_a_pod_deleted_gracefully_is_terminating_then_its_runs_end_pod_terminating(busy_pod):
    obj, run, ws = busy_pod
    m = obj["metadata"]
    apply(pod_object(m["name"], m["uid"], deleting=True))
    assert (row().phase, row().ready) == ("Terminating", False)
    assert beat(obj) == (row(), False) and row().phase == "Terminating"
    kube_pods.forget_pod("default", m["name"], m["uid"], timezone.now())
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodTerminating")


def test_rows_of_pods_no_longer_listed_are_gone_local_rows_are_not_touched(busy_pod):
    from tests.helpers.records import make_pod

    obj, run, ws = busy_pod
    local = make_pod("local-a")
    assert kube_pods.forget_unlisted([], timezone.now()) == 1
    assert fresh(run).status["reason"] == "PodGone"
    assert list(RuntimePod.objects.values_list("name", flat=True)) == [local.name]


def test_a_pod_that_cannot_be_a_runtime_pod_is_refused():
    obj = pod_object()
    del obj["metadata"]["labels"]["runtime"]
    with pytest.raises(ValueError, match="the runtime label"):
        kube_pods.observed(obj)


def test_a_silent_kubernetes_pod_is_not_removed_by_the_beat_pass_the_api_says_when_it_goes():
    from tests.helpers.records import make_pod

    make_runtime()
    obj = pod_object()
    apply(obj)
    for name in ("local-a", "local-b", "local-c"):  # most pods heard: the silence is theirs
        make_pod(name)
    make_pod("local-silent", heartbeat_age=600)
    RuntimePod.objects.filter(provider="kubernetes").update(
        last_heartbeat=timezone.now() - timedelta(minutes=10)
    )
    assert pods.reconcile_pods(timezone.now())["removed"] == 1
    assert not RuntimePod.objects.filter(name="local-silent").exists()
    assert RuntimePod.objects.filter(name=obj["metadata"]["name"]).exists()
