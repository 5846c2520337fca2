"""RuntimePod rows have one writer (``scheduling.pod_writer``): every change of what a pod is
takes the cluster's next resourceVersion and records one watch event, which its kind's
watchers (the scheduler, the workspace controller) see; a heartbeat that changes nothing but
the beat records nothing; and no other module writes the rows."""

from __future__ import annotations

import ast
import json
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.machinery.conditions import format_time
from portal.machinery.registry import registry
from portal.models import WatchEvent, WorkItem
from scheduling import pod_writer, pods, triggers
from scheduling.models import RuntimePod
from scheduling.providers import kube_pods, local, rows
from tests.helpers.records import make_pod, make_runtime
from tests.helpers.source import method_calls
from tests.portal.machinery.test_tables import KUBECTL_ACCEPT
from tests.scheduling.providers.test_kube_pods import pod_object
from workspaces import triggers as workspace_triggers

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
PODS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runtimepods"


def recorded() -> list[tuple[str, str, int]]:
    kind = registry.for_model(RuntimePod)
    return list(
        WatchEvent.objects.filter(kind_key=kind.key)
        .order_by("resource_version")
        .values_list("type", "name", "resource_version")
    )


def version(name: str) -> int:
    return RuntimePod.objects.get(name=name).resource_version


def beat(pod: RuntimePod, **extra) -> tuple:
    message = {
        "namespace": pod.namespace,
        "podName": pod.name,
        "podUID": str(pod.uid),
        "podIncarnation": pod.incarnation,
        "activeRuns": [],
        "time": format_time(timezone.now()),
        **extra,
    }
    return pods.record_heartbeat(message, timezone.now())


def test_the_local_provider_and_heartbeats_record_each_change_once(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    make_runtime()
    identity = local.new_identity("default", "bash")
    local.register(identity)
    added = version(identity.name)
    assert recorded() == [("ADDED", identity.name, added)]
    pod = RuntimePod.objects.get()
    assert beat(pod)[1]  # became ready
    ready = version(identity.name)
    local.mark_terminating(identity)
    terminating = version(identity.name)
    rows.end_pod(identity.namespace, identity.name, identity.uid, timezone.now())
    deleted = recorded()[-1][2]
    assert added < ready < terminating < deleted
    assert recorded() == [
        ("ADDED", identity.name, added),
        ("MODIFIED", identity.name, ready),
        ("MODIFIED", identity.name, terminating),
        ("DELETED", identity.name, deleted),
    ]


def test_the_kubernetes_provider_records_each_change_once():
    make_runtime()
    obj = pod_object("bash-k")
    kube_pods.apply_pod(kube_pods.observed(obj), timezone.now())
    kube_pods.apply_pod(kube_pods.observed(obj), timezone.now())  # nothing new
    assert [t for t, _, _ in recorded()] == ["ADDED"]
    beat(RuntimePod.objects.get())
    obj["metadata"]["labels"]["zone"] = "a"
    kube_pods.apply_pod(kube_pods.observed(obj), timezone.now())
    assert RuntimePod.objects.get().labels["zone"] == "a"
    uid = obj["metadata"]["uid"]
    kube_pods.forget_pod("default", "bash-k", uid, timezone.now())
    assert [t for t, _, _ in recorded()] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    versions = [v for _, _, v in recorded()]
    assert versions == sorted(set(versions))


def test_the_beat_pass_records_pods_going_not_ready_and_going_away():
    make_pod("quiet", heartbeat_age=60)
    make_pod("gone", heartbeat_age=3600)
    for name in ("heard-0", "heard-1", "heard-2"):  # most pods heard: no disruption
        make_pod(name)
    before = len(recorded())
    result = pods.reconcile_pods(timezone.now())
    assert result == {"not_ready": 2, "removed": 1}
    assert [(t, n) for t, n, _ in recorded()[before:]] == [
        ("MODIFIED", "quiet"),
        ("MODIFIED", "gone"),
        ("DELETED", "gone"),
    ]
    assert not RuntimePod.objects.get(name="quiet").ready


def test_a_heartbeat_that_changes_nothing_but_the_beat_records_nothing():
    make_runtime()
    pod = make_pod("bash-a", runs=2)
    beat(pod)  # the Runtime's capacity, as a first heartbeat brings it
    seen, events = version("bash-a"), len(recorded())
    runs = [{"uid": "u1", "attempt": 1}]
    with CaptureQueriesContext(connection) as queries:
        heard, became_ready = beat(pod, activeRuns=runs)
    assert not became_ready
    assert (version("bash-a"), len(recorded())) == (seen, events)
    row = RuntimePod.objects.get()
    assert row.active_runs == runs and row.last_heartbeat == heard.last_heartbeat
    # the pod locked, the Runtime's capacity read, one UPDATE: as before pods were recorded
    statements = [q["sql"] for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 3, statements


def test_a_heartbeat_that_makes_a_pod_ready_is_recorded_at_a_new_version():
    make_runtime()
    pod = make_pod("bash-a", ready=False)
    seen = version("bash-a")
    assert beat(pod)[1]
    assert version("bash-a") > seen
    assert recorded()[-1] == ("MODIFIED", "bash-a", version("bash-a"))


def test_the_watchers_see_pod_changes():
    make_runtime()
    WorkItem.objects.all().delete()
    pod = make_pod("bash-a", ready=False)
    queued = set(WorkItem.objects.values_list("queue", "key"))
    # a pod not ready takes no Run: the scheduler is not woken, the workspaces are
    assert queued == {(workspace_triggers.QUEUE, "default")}
    WorkItem.objects.all().delete()
    beat(pod)
    queued = set(WorkItem.objects.values_list("queue", "key"))
    assert queued == {(workspace_triggers.QUEUE, "default"), (triggers.QUEUE, triggers.KEY)}
    WorkItem.objects.all().delete()
    pod_writer.delete_where(RuntimePod.objects.filter(pk=pod.pk))
    assert set(WorkItem.objects.values_list("queue", "key")) == {
        (workspace_triggers.QUEUE, "default")
    }


def test_a_pod_shows_its_resource_version(admin_api):
    make_pod("bash-a")
    body = admin_api.get(f"{PODS}/bash-a").json()
    assert body["metadata"]["resourceVersion"] == str(version("bash-a"))


@pytest.mark.django_db(transaction=True)
def test_a_watch_of_runtimepods_sees_their_changes(admin_api, settings):
    settings.KRUNTIMES_WATCH_POLL_SECONDS = 0.05
    pod = make_pod("bash-a")
    listed = admin_api.get(PODS).json()["metadata"]["resourceVersion"]

    def change_soon():
        time.sleep(0.3)
        pod_writer.update_where(RuntimePod.objects.filter(pk=pod.pk), ready=False)
        make_pod("bash-b")
        pod_writer.delete_where(RuntimePod.objects.filter(name="bash-a"))

    writer = threading.Thread(target=change_soon)
    writer.start()
    response = admin_api.get(PODS, {"watch": "1", "resourceVersion": listed, "timeoutSeconds": "2"})
    seen = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    writer.join()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
        ("MODIFIED", "bash-a"),
        ("ADDED", "bash-b"),
        ("DELETED", "bash-a"),
    ]
    assert seen[0]["object"]["status"]["ready"] is False
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in seen]
    assert versions == sorted(versions) and versions[0] > int(listed)


@pytest.mark.django_db(transaction=True)
def test_a_table_watch_shows_each_change_in_the_columns_it_had(admin_api, settings):
    """What ``kubectl get runtimepods --watch`` asks for: each change as a Table row."""
    settings.KRUNTIMES_WATCH_POLL_SECONDS = 0.05
    pod = make_pod("bash-a", runs=3)
    listed = admin_api.get(PODS).json()["metadata"]["resourceVersion"]
    pod_writer.update_where(RuntimePod.objects.filter(pk=pod.pk), phase="Terminating", ready=False)
    response = admin_api.get(
        PODS,
        {"watch": "1", "resourceVersion": listed, "timeoutSeconds": "1"},
        HTTP_ACCEPT=KUBECTL_ACCEPT,
    )
    (event,) = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert event["type"] == "MODIFIED" and event["object"]["kind"] == "Table"
    (row,) = event["object"]["rows"]
    names = [c["name"] for c in event["object"]["columnDefinitions"]]
    cells = dict(zip(names, row["cells"], strict=False))
    assert (cells["Name"], cells["Runtime"], cells["Phase"], cells["Ready"], cells["Runs"]) == (
        "bash-a",
        "bash",
        "Terminating",
        "false",
        "0/3",
    )


# --- one writer ------------------------------------------------------------------------------

WRITES = {
    "create",
    "bulk_create",
    "get_or_create",
    "update_or_create",
    "update",
    "bulk_update",
    "delete",
    "_raw_delete",
    "save",
}
SHIPPED = ("portal", "scheduling", "workspaces", "workflows", "jobclasses", "benchmarks")


def _names_runtime_pod(node: ast.AST) -> bool:
    """Whether a call's receiver chain starts at ``RuntimePod`` (``RuntimePod.objects...``)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == "RuntimePod"


def pod_row_writes(path: Path) -> list[int]:
    return method_calls(
        path, lambda _, method: method.attr in WRITES and _names_runtime_pod(method.value)
    )


def test_the_check_finds_a_write(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("RuntimePod.objects.all()\nRuntimePod.objects.filter(pk=1).update(ready=1)\n")
    assert pod_row_writes(path) == [2]


def test_no_other_module_writes_runtime_pod_rows():
    writer = ROOT / "scheduling" / "pod_writer.py"
    found = {
        str(path.relative_to(ROOT)): lines
        for package in SHIPPED
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != writer and "migrations" not in path.parts and (lines := pod_row_writes(path))
    }
    assert found == {}
    assert pod_row_writes(writer)  # the writer itself is seen by the check


def test_heartbeat_times_alone_are_one_statement_for_many_pods():
    make_pod("a")
    make_pod("b")
    events = len(recorded())
    now = timezone.now() + timedelta(seconds=5)
    with CaptureQueriesContext(connection) as queries:
        recorded_changes = pod_writer.update_where(RuntimePod.objects.all(), last_heartbeat=now)
    assert recorded_changes == 0 and len(queries) == 1 and len(recorded()) == events
    assert set(RuntimePod.objects.values_list("last_heartbeat", flat=True)) == {now}
