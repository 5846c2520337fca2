"""The kubernetes provider over real HTTP, through the official client, against the emulator:
Runtimes become Deployments, the Deployments' Pods become RuntimePods, Pods that go take
their Runs (PodGone) and workspaces (Lost) with them, and the watch survives 410 Gone."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal import kube
from portal.machinery import store
from portal.machinery.conditions import format_time
from scheduling import tasks
from scheduling.models import Runtime, RuntimePod
from scheduling.providers.kubernetes import KubernetesProvider
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.kube import EmulatorServer
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNTIMES, fresh, make_run, make_runtime
from tests.helpers.workspaces import fresh_workspace, make_workspace
from workspaces.models import WorkspacePhase

pytestmark = pytest.mark.django_db
LABELS = {"app.kubernetes.io/managed-by": "kruntimes-portal"}


@pytest.fixture
def cluster():
    with EmulatorServer() as server:
        yield server


@pytest.fixture
def provider(cluster):
    return KubernetesProvider(kube.api_client(host=cluster.url), request_timeout=5, watch_seconds=1)


def deployment(cluster, name: str = "runtime-bash", namespace: str = "default") -> dict | None:
    return cluster.store.find("apps", "deployments", namespace, name)


def add_pod(cluster, name: str, *, runtime: str = "bash", ready: bool = True) -> dict:
    """A Pod as the Deployment's ReplicaSet makes it, then Running (and Ready) as kubelet says."""
    created = cluster.store.create(
        "",
        "pods",
        "default",
        {
            "metadata": {"name": name, "labels": {**LABELS, "runtime": runtime}},
            "spec": {"containers": [{"name": "runtime", "image": "bash:5"}]},
        },
    )
    return set_status(cluster, name, ready=ready) if ready is not None else created


def set_status(cluster, name: str, *, ready: bool, phase: str = "Running") -> dict:
    status = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    return cluster.store.patch(
        "", "pods", "default", name, lambda pod: {**pod, "status": status}, subresource="status"
    )


def heartbeat(pod: dict) -> bool:
    """runtimed's heartbeat arrives (the control task); whether the pod's row is Ready after."""
    meta = pod["metadata"]
    beat = {
        "namespace": meta["namespace"],
        "runtime": meta["labels"]["runtime"],
        "podName": meta["name"],
        "podUID": meta["uid"],
        "activeRuns": [],
        "time": format_time(timezone.now()),
    }
    tasks.runtime_pod_heartbeat(beat)
    return RuntimePod.objects.filter(name=meta["name"], uid=meta["uid"], ready=True).exists()


def rows() -> dict[str, str]:
    return {p.name: str(p.uid) for p in RuntimePod.objects.all()}


# --- Deployments -------------------------------------------------------------------------


def test_a_runtime_becomes_its_deployment(cluster, provider):
    make_runtime(daemonImage="portal:test")
    sweep = provider.ensure_deployments()
    assert (sweep.created, sweep.failed) == (1, 0)
    made = deployment(cluster)
    assert made["metadata"]["labels"] == {**LABELS, "runtime": "bash"}
    assert made["spec"]["selector"] == {"matchLabels": {"runtime": "bash"}}
    template = made["spec"]["template"]
    assert template["metadata"]["labels"]["runtime"] == "bash"
    runtimed = template["spec"]["containers"][-1]
    assert (runtimed["name"], runtimed["image"]) == ("runtimed", "portal:test")
    assert {"name": "workspace", "emptyDir": {}} in template["spec"]["volumes"]
    again = provider.ensure_deployments()
    assert (again.created, again.updated) == (0, 0)  # already what the Runtime asks for
    assert deployment(cluster)["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


def test_replicas_and_spec_changes_replace_the_deployment(cluster, provider):
    make_runtime()
    runtime = Runtime.objects.get(name="bash")
    provider.ensure_deployments()
    assert deployment(cluster)["spec"]["replicas"] == 1
    manifest = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "bash", "resourceVersion": str(runtime.resource_version)},
        "spec": {**runtime.spec, "replicas": 3, "workspace": {"hostPath": {"path": "/srv"}}},
    }
    store.replace(RUNTIMES, "default", "bash", manifest, context=OPERATOR)
    assert provider.ensure_deployments().updated == 1
    updated = deployment(cluster)
    assert updated["spec"]["replicas"] == 3
    volumes = updated["spec"]["template"]["spec"]["volumes"]
    assert {"name": "workspace", "hostPath": {"path": "/srv"}} in volumes


def test_a_deployment_scaled_by_hand_is_scaled_back(cluster, provider):
    make_runtime()
    provider.ensure_deployments()
    cluster.store.patch(
        "apps",
        "deployments",
        "default",
        "runtime-bash",
        lambda d: {**d, "spec": {**d["spec"], "replicas": 7}},
    )
    assert provider.ensure_deployments().updated == 1
    assert deployment(cluster)["spec"]["replicas"] == 1


def test_deleting_the_runtime_deletes_its_deployment_and_only_ours(cluster, provider):
    make_runtime()
    provider.ensure_deployments()
    theirs = {
        "metadata": {"name": "runtime-other", "labels": {"runtime": "other"}},
        "spec": {
            "selector": {"matchLabels": {"runtime": "other"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    cluster.store.create("apps", "deployments", "default", theirs)
    store.delete(RUNTIMES, "default", "bash", context=OPERATOR)
    assert not Runtime.objects.exists()
    assert provider.ensure_deployments().deleted == 1
    assert deployment(cluster) is None
    assert deployment(cluster, "runtime-other") is not None  # not managed by us: left alone


def test_one_runtimes_error_does_not_stop_the_sweep(cluster, provider):
    make_runtime("elsewhere", namespace="default")
    # a namespace the cluster does not have: its create is refused (404) ...
    Runtime.objects.filter(name="elsewhere").update(namespace="no-such-namespace")
    # ... and a row admitted before a rule existed, whose template the client refuses
    make_runtime("broken")
    Runtime.objects.filter(name="broken").update(spec={"template": {"spec": {"containers": "x"}}})
    make_runtime("bash")
    sweep = provider.ensure_deployments()
    assert (sweep.created, sweep.failed) == (1, 2)
    assert deployment(cluster) is not None


# --- Pods --------------------------------------------------------------------------------


def test_pods_become_runtime_pods_ready_only_with_a_heartbeat(cluster, provider):
    make_runtime(capacity={"resources": {"runs": 4}})
    pod = add_pod(cluster, "runtime-bash-6f7d-abcde")
    not_ours = {"metadata": {"name": "not-ours", "labels": {"runtime": "bash"}}}
    cluster.store.create("", "pods", "default", {**not_ours, "spec": {"containers": []}})
    provider.relist()
    row = RuntimePod.objects.get()
    assert (row.name, str(row.uid), row.provider) == (
        pod["metadata"]["name"],
        pod["metadata"]["uid"],
        "kubernetes",
    )
    assert (row.phase, row.ready, row.capacity) == ("Running", False, {"runs": 4})
    assert heartbeat(pod) and RuntimePod.objects.get().ready
    assert fresh_runtime().status["readyReplicas"] == 1


def fresh_runtime(name: str = "bash") -> Runtime:
    return Runtime.objects.get(name=name)


def test_a_pod_whose_ready_condition_goes_false_stops_being_ready(cluster, provider):
    make_runtime()
    pod = add_pod(cluster, "runtime-bash-6f7d-abcde")
    provider.relist()
    heartbeat(pod)
    set_status(cluster, pod["metadata"]["name"], ready=False)
    provider.watch(1)
    assert not RuntimePod.objects.get().ready


@pytest.fixture
def busy(cluster, provider, django_capture_on_commit_callbacks):
    """A Ready Runtime Pod with a Run and a PersistentWorkspace bound to it."""
    make_runtime()
    pod = add_pod(cluster, "runtime-bash-6f7d-abcde")
    with django_capture_on_commit_callbacks(execute=True):
        provider.relist()
        heartbeat(pod)
        ws = make_workspace("cache")
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    assert fresh(run).assigned_pod == pod["metadata"]["name"]
    assert fresh_workspace(ws).phase == WorkspacePhase.BOUND
    return pod, run, ws


def test_deleting_a_pod_fails_its_runs_pod_gone_and_turns_its_workspace_lost(
    cluster, provider, busy, django_capture_on_commit_callbacks
):
    pod, run, ws = busy
    cluster.store.delete("", "pods", "default", pod["metadata"]["name"])
    with django_capture_on_commit_callbacks(execute=True):
        assert provider.watch(1) == 1
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodGone")
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    assert rows() == {}
    assert not heartbeat(pod)  # a late heartbeat brings no ghost back
    assert rows() == {}


def test_a_replacement_under_the_same_name_is_a_new_pod(
    cluster, provider, busy, django_capture_on_commit_callbacks
):
    pod, run, ws = busy
    name = pod["metadata"]["name"]
    cluster.store.delete("", "pods", "default", name)
    replacement = add_pod(cluster, name)
    assert replacement["metadata"]["uid"] != pod["metadata"]["uid"]
    with django_capture_on_commit_callbacks(execute=True):
        provider.watch(1)
    assert fresh(run).status["reason"] == "PodGone"
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    assert rows() == {name: replacement["metadata"]["uid"]}
    assert not RuntimePod.objects.get().ready  # the new pod's runtimed has not beaten yet


def test_a_watch_resumes_after_410_by_relisting_and_converges(
    cluster, provider, busy, django_capture_on_commit_callbacks
):
    pod, run, ws = busy
    old_version = provider.resource_version
    cluster.store.delete("", "pods", "default", pod["metadata"]["name"])  # unseen ...
    newcomer = add_pod(cluster, "runtime-bash-6f7d-fghjk")
    cluster.compact()  # ... and the history that had it is gone: the watch gets 410
    relists = provider.relists
    with django_capture_on_commit_callbacks(execute=True):
        provider.watch(1)
    assert provider.relists == relists + 1
    assert provider.resource_version != old_version
    assert rows() == {newcomer["metadata"]["name"]: newcomer["metadata"]["uid"]}
    assert fresh(run).status["reason"] == "PodGone"
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    # and it goes on watching from the relisted version
    cluster.store.delete("", "pods", "default", newcomer["metadata"]["name"])
    provider.watch(1)
    assert rows() == {}


def test_the_watch_resumes_from_its_last_version_without_relisting(cluster, provider):
    make_runtime()
    provider.relist()
    relists = provider.relists
    first = add_pod(cluster, "runtime-bash-6f7d-aaaaa")
    provider.watch(1)
    second = add_pod(cluster, "runtime-bash-6f7d-bbbbb")  # while no watch was open
    provider.watch(1)
    assert provider.relists == relists
    assert set(rows()) == {first["metadata"]["name"], second["metadata"]["name"]}


def test_one_pods_error_does_not_stop_the_sweep_nor_end_that_pod(cluster, provider, busy):
    pod, run, ws = busy
    other = add_pod(cluster, "runtime-bash-6f7d-zzzzz")
    cluster.store.patch(  # a Pod this provider cannot read
        "",
        "pods",
        "default",
        pod["metadata"]["name"],
        lambda p: {**p, "status": ["junk"]},
        subresource="status",
    )
    provider.relist()
    assert set(rows()) == {pod["metadata"]["name"], other["metadata"]["name"]}
    assert fresh(run).phase == "Scheduled"  # still bound: the pod is there, only unreadable


def test_a_replace_that_lost_a_race_is_retried_by_the_next_sweep(cluster, provider):
    from scheduling.providers.deployment import deployment_manifest
    from scheduling.providers.kubernetes import Sweep, runtimed_options

    make_runtime()
    provider.ensure_deployments()
    seen = deployment(cluster)  # what a sweep read ...
    cluster.store.patch(  # ... before someone else wrote the Deployment
        "apps",
        "deployments",
        "default",
        "runtime-bash",
        lambda d: {
            **d,
            "metadata": {**d["metadata"], "labels": {**d["metadata"]["labels"], "x": "y"}},
        },
    )
    runtime = Runtime.objects.get()
    wanted = deployment_manifest(
        "default", "bash", str(runtime.uid), {**runtime.spec, "replicas": 2}, runtimed_options()
    )
    sweep = Sweep()
    provider._ensure(wanted, seen, sweep)  # 409 Conflict: nothing overwritten, nothing raised
    assert sweep.updated == 0 and deployment(cluster)["spec"]["replicas"] == 1
    Runtime.objects.update(spec={**runtime.spec, "replicas": 2})
    assert provider.ensure_deployments().updated == 1
    assert deployment(cluster)["spec"]["replicas"] == 2


def test_a_pod_deleted_gracefully_is_terminating_then_its_runs_end_pod_terminating(
    cluster, provider, django_capture_on_commit_callbacks
):
    make_runtime()
    name = "runtime-bash-6f7d-abcde"
    pod = cluster.store.create(
        "",
        "pods",
        "default",
        {
            "metadata": {
                "name": name,
                "labels": {**LABELS, "runtime": "bash"},
                "finalizers": ["test/hold"],
            },
            "spec": {"containers": [{"name": "runtime", "image": "bash:5"}]},
        },
    )
    set_status(cluster, name, ready=True)
    provider.relist()
    heartbeat(pod)
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    cluster.store.delete("", "pods", "default", name)  # kubelet is stopping it
    provider.watch(1)
    row = RuntimePod.objects.get()
    assert (row.phase, row.ready) == ("Terminating", False)
    assert not heartbeat(pod) and RuntimePod.objects.get().phase == "Terminating"
    cluster.store.patch(
        "",
        "pods",
        "default",
        name,
        lambda p: {**p, "metadata": {**p["metadata"], "finalizers": []}},
    )
    with django_capture_on_commit_callbacks(execute=True):
        provider.watch(1)
    assert rows() == {}
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodTerminating")


# --- with the emulator's workload controllers: Deployment -> ReplicaSet -> Pods -----------


def replace_runtime(**spec) -> None:
    runtime = Runtime.objects.get(name="bash")
    manifest = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "bash", "resourceVersion": str(runtime.resource_version)},
        "spec": {**runtime.spec, **spec},
    }
    store.replace(RUNTIMES, "default", "bash", manifest, context=OPERATOR)


def test_a_runtime_becomes_ready_runtime_pods_scales_and_loses_a_deleted_pods_workspace(
    cluster, provider, django_capture_on_commit_callbacks
):
    make_runtime(replicas=2)
    provider.sync_once()
    made = cluster.pods("default", "runtime=bash")
    assert len(made) == 2
    assert rows() == {p["metadata"]["name"]: p["metadata"]["uid"] for p in made}
    assert not RuntimePod.objects.filter(ready=True).exists()  # Ready, but runtimed unheard
    with django_capture_on_commit_callbacks(execute=True):
        assert all(heartbeat(p) for p in made)
        ws = make_workspace("cache")
    assert fresh_runtime().status["readyReplicas"] == 2

    replace_runtime(replicas=3)
    assert provider.ensure_deployments().updated == 1
    provider.watch(1)
    assert len(rows()) == 3 == len(cluster.pods("default", "runtime=bash"))

    bound = fresh_workspace(ws).bound_pod
    run = make_run("r1", workspace={"name": "cache"})
    run_pass(default_framework(), timezone.now())
    assert fresh(run).assigned_pod == bound
    cluster.delete_pod("default", bound)  # out of band: the ReplicaSet makes a new one
    with django_capture_on_commit_callbacks(execute=True):
        provider.watch(1)
    assert (fresh(run).phase, fresh(run).status["reason"]) == ("Failed", "PodGone")
    assert fresh_workspace(ws).phase == WorkspacePhase.LOST
    now_there = cluster.pods("default", "runtime=bash")
    assert len(now_there) == 3 and bound not in {p["metadata"]["name"] for p in now_there}
    assert rows() == {p["metadata"]["name"]: p["metadata"]["uid"] for p in now_there}

    store.delete(RUNTIMES, "default", "bash", context=OPERATOR)
    assert provider.ensure_deployments().deleted == 1
    provider.watch(1)
    assert cluster.pods("default", "runtime=bash") == [] and rows() == {}


def test_a_pod_that_never_becomes_ready_is_never_a_ready_runtime_pod(cluster, provider):
    cluster.never_ready("default", "runtime-bash")
    make_runtime()
    provider.sync_once()
    (pod,) = cluster.pods("default", "runtime=bash")
    assert pod["status"]["phase"] == "Running"
    assert not heartbeat(pod)
    cluster.set_pod_ready("default", pod["metadata"]["name"], True)
    provider.watch(1)
    assert RuntimePod.objects.get().ready  # heard from, and now Ready
