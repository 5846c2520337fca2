"""Deployments and Jobs make Pods that become Ready; hooks fail, unready and delete them."""

from __future__ import annotations

import re
import threading
import time

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from tests.helpers.waiting import wait_until


def deployment(name: str, replicas: int, image: str = "busybox") -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"runtime": name}},
            "template": {
                "metadata": {"labels": {"runtime": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def job(name: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"run": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]},
            }
        },
    }


def ready(pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def pods_of(core, selector):
    return core.list_namespaced_pod("default", label_selector=selector).items


def test_a_deployment_makes_ready_pods_named_and_owned_as_kubernetes_does(core, apps):
    apps.create_namespaced_deployment("default", deployment("runtime-a", 2))
    pods = pods_of(core, "runtime=runtime-a")
    assert len(pods) == 2
    replicaset = apps.list_namespaced_replica_set("default").items[0]
    pod_hash = replicaset.metadata.labels["pod-template-hash"]
    assert replicaset.metadata.name == f"runtime-a-{pod_hash}"
    assert replicaset.metadata.owner_references[0].kind == "Deployment"
    for pod in pods:
        assert re.fullmatch(rf"runtime-a-{pod_hash}-[a-z0-9]{{5}}", pod.metadata.name)
        assert pod.metadata.labels == {"runtime": "runtime-a", "pod-template-hash": pod_hash}
        owner = pod.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.controller) == (
            "ReplicaSet",
            replicaset.metadata.name,
            True,
        )
        assert pod.status.phase == "Running" and ready(pod)
        assert pod.spec.node_name and pod.status.pod_ip
    assert len({pod.metadata.uid for pod in pods}) == 2
    status = apps.read_namespaced_deployment("runtime-a", "default").status
    assert (status.replicas, status.ready_replicas, status.available_replicas) == (2, 2, 2)


def test_scaling_adds_and_removes_pods(core, apps):
    apps.create_namespaced_deployment("default", deployment("web", 1))
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert len(pods_of(core, "runtime=web")) == 3
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 1}})
    assert len(pods_of(core, "runtime=web")) == 1
    assert apps.read_namespaced_deployment("web", "default").status.ready_replicas == 1


def test_a_deleted_pod_is_replaced_under_a_new_name_and_uid(core, apps, kube):
    apps.create_namespaced_deployment("default", deployment("web", 1))
    (first,) = pods_of(core, "runtime=web")
    core.delete_namespaced_pod(first.metadata.name, "default")
    (second,) = pods_of(core, "runtime=web")
    assert second.metadata.name != first.metadata.name
    assert second.metadata.uid != first.metadata.uid
    kube.delete_pod("default", second.metadata.name)  # out of band
    (third,) = pods_of(core, "runtime=web")
    assert third.metadata.uid not in (first.metadata.uid, second.metadata.uid)


def test_a_failed_pod_is_replaced_and_stays_failed(core, apps, kube):
    apps.create_namespaced_deployment("default", deployment("web", 1))
    (first,) = pods_of(core, "runtime=web")
    kube.fail_pod("default", first.metadata.name, exit_code=2)
    pods = {pod.metadata.name: pod for pod in pods_of(core, "runtime=web")}
    assert len(pods) == 2
    failed = pods[first.metadata.name]
    assert failed.status.phase == "Failed" and not ready(failed)
    assert failed.status.container_statuses[0].state.terminated.exit_code == 2


def test_a_changed_template_replaces_the_replicaset_and_its_pods(core, apps):
    apps.create_namespaced_deployment("default", deployment("web", 2))
    old = {pod.metadata.name for pod in pods_of(core, "runtime=web")}
    apps.patch_namespaced_deployment(
        "web",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "v2"}]}}}},
    )
    pods = pods_of(core, "runtime=web")
    assert len(pods) == 2 and not old & {pod.metadata.name for pod in pods}
    assert {pod.spec.containers[0].image for pod in pods} == {"v2"}


def test_deleting_the_deployment_deletes_its_pods(core, apps):
    apps.create_namespaced_deployment("default", deployment("web", 2))
    apps.delete_namespaced_deployment("web", "default")
    assert pods_of(core, "runtime=web") == []
    assert apps.list_namespaced_replica_set("default").items == []


def test_never_ready_and_set_ready_hooks(core, apps, kube):
    kube.never_ready("default", "web-")
    apps.create_namespaced_deployment("default", deployment("web", 1))
    (pod,) = pods_of(core, "runtime=web")
    assert pod.status.phase == "Running" and not ready(pod)
    assert not apps.read_namespaced_deployment("web", "default").status.ready_replicas
    kube.set_pod_ready("default", pod.metadata.name, True)
    assert ready(core.read_namespaced_pod(pod.metadata.name, "default"))
    assert apps.read_namespaced_deployment("web", "default").status.ready_replicas == 1
    kube.set_pod_ready("default", pod.metadata.name, False)
    assert not ready(core.read_namespaced_pod(pod.metadata.name, "default"))


def test_readiness_waits_for_the_configured_delay(core, kube):
    kube.workloads.ready_delay = 0.5
    core.create_namespaced_pod(
        "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    )
    assert core.read_namespaced_pod("p", "default").status.phase == "Pending"
    wait_until(lambda: ready(core.read_namespaced_pod("p", "default")), timeout=5)


def test_a_job_makes_one_labelled_pod_and_counts_it_active(core, batch):
    created = batch.create_namespaced_job("default", job("build"))
    uid = created.metadata.uid
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    (pod,) = pods_of(core, "job-name=build")
    assert re.fullmatch(r"build-[a-z0-9]{5}", pod.metadata.name)
    labels = pod.metadata.labels
    assert labels["batch.kubernetes.io/job-name"] == "build" and labels["run"] == "build"
    assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] == uid
    assert pod.metadata.owner_references[0].uid == uid and ready(pod)
    status = batch.read_namespaced_job("build", "default").status
    assert status.active == 1 and status.ready == 1 and status.start_time is not None


def test_a_job_completes_when_its_pod_succeeds(core, batch, kube):
    batch.create_namespaced_job("default", job("build"))
    (pod,) = pods_of(core, "job-name=build")
    kube.succeed_pod("default", pod.metadata.name)
    status = batch.read_namespaced_job("build", "default").status
    assert status.succeeded == 1 and not status.active and status.completion_time
    assert {c.type for c in status.conditions if c.status == "True"} >= {"Complete"}


def test_a_job_retries_a_failed_pod_until_its_backoff_limit(core, batch, kube):
    body = job("build")
    body["spec"]["backoffLimit"] = 1
    batch.create_namespaced_job("default", body)
    (first,) = pods_of(core, "job-name=build")
    kube.fail_pod("default", first.metadata.name)
    assert batch.read_namespaced_job("build", "default").status.failed == 1
    (second,) = [p for p in pods_of(core, "job-name=build") if p.status.phase == "Running"]
    kube.fail_pod("default", second.metadata.name)
    status = batch.read_namespaced_job("build", "default").status
    assert status.failed == 2 and not status.active
    failed = [c for c in status.conditions if c.type == "Failed"][0]
    assert (failed.status, failed.reason) == ("True", "BackoffLimitExceeded")


def test_deleting_a_job_in_the_background_deletes_its_pod_and_by_default_orphans_it(core, batch):
    batch.create_namespaced_job("default", job("a"))
    batch.delete_namespaced_job("a", "default", propagation_policy="Background")
    assert pods_of(core, "job-name=a") == []
    batch.create_namespaced_job("default", job("b"))
    batch.delete_namespaced_job("b", "default")
    (orphan,) = pods_of(core, "job-name=b")
    assert orphan.metadata.owner_references is None


def test_pod_events_flow_to_a_watch_with_versions(core, apps):
    seen: list = []
    watch = kubernetes.watch.Watch()

    def consume():
        for event in watch.stream(core.list_namespaced_pod, "default", timeout_seconds=5):
            seen.append((event["type"], event["object"]))
            if event["type"] == "DELETED":
                watch.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.3)
    apps.create_namespaced_deployment("default", deployment("web", 1))
    wait_until(lambda: any(kind == "MODIFIED" and ready(pod) for kind, pod in seen), timeout=5)
    core.delete_namespaced_pod(seen[0][1].metadata.name, "default")
    thread.join(10)
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "ADDED" and seen[0][1].status.phase == "Pending"
    assert "MODIFIED" in kinds and kinds[-1] == "DELETED"
    versions = [int(pod.metadata.resource_version) for _, pod in seen]
    assert versions == sorted(versions)


def test_a_pod_in_a_missing_namespace_is_refused(core):
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod(
            "nowhere", {"metadata": {"name": "p"}, "spec": {"containers": []}}
        )
    assert caught.value.status == 404
