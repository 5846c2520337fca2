"""The Deployment a Runtime stands for: labels, selector, runtimed, volumes, replicas, hash."""

from __future__ import annotations

import json

import pytest

from scheduling.providers import deployment
from scheduling.providers.deployment import RuntimedOptions, deployment_manifest, is_current

OPTIONS = RuntimedOptions(image="portal:1", broker_url="redis://broker:6379/0")
UID = "6b1f0c2e-8f0a-4c3e-9d7a-2a4b5c6d7e8f"


def spec(**extra) -> dict:
    return {
        "template": {
            "metadata": {"labels": {"team": "ci"}, "annotations": {"note": "x"}},
            "spec": {"containers": [{"name": "runtime", "image": "bash:5"}]},
        },
        **extra,
    }


def manifest(**extra) -> dict:
    return deployment_manifest("team-a", "bash", UID, spec(**extra), OPTIONS)


def container(m: dict, name: str) -> dict:
    return next(c for c in m["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def env(c: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


def volume(m: dict, name: str) -> dict:
    return next(v for v in m["spec"]["template"]["spec"]["volumes"] if v["name"] == name)


def test_name_labels_selector_and_ownership():
    m = manifest()
    assert (m["apiVersion"], m["kind"]) == ("apps/v1", "Deployment")
    assert (m["metadata"]["name"], m["metadata"]["namespace"]) == ("runtime-bash", "team-a")
    ours = {"app.kubernetes.io/managed-by": "kruntimes-portal", "runtime": "bash"}
    assert m["metadata"]["labels"] == ours
    assert m["metadata"]["annotations"]["kruntimes.io/runtime-uid"] == UID
    assert m["spec"]["selector"] == {"matchLabels": {"runtime": "bash"}}
    template = m["spec"]["template"]
    assert template["metadata"]["labels"] == {"team": "ci", **ours}
    assert template["metadata"]["annotations"] == {"note": "x"}
    assert template["spec"]["restartPolicy"] == "Always"
    assert deployment.pod_selector() == "app.kubernetes.io/managed-by=kruntimes-portal,runtime"


def test_a_template_label_cannot_take_the_selector_away():
    s = spec()
    s["template"]["metadata"]["labels"]["runtime"] = "other"
    m = deployment_manifest("team-a", "bash", UID, s, OPTIONS)
    assert m["spec"]["template"]["metadata"]["labels"]["runtime"] == "bash"


def test_runtimed_runs_the_worker_with_its_identity_from_the_downward_api():
    m = manifest()
    names = [c["name"] for c in m["spec"]["template"]["spec"]["containers"]]
    assert names == ["runtime", "runtimed"]
    runtimed = container(m, "runtimed")
    assert runtimed["image"] == "portal:1"
    assert runtimed["command"] == ["python", "-m", "runtimed"]
    values = env(runtimed)
    for prefix in ("", "KRUNTIME_"):
        assert values[f"{prefix}POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
        assert values[f"{prefix}POD_UID"] == {"fieldRef": {"fieldPath": "metadata.uid"}}
        assert values[f"{prefix}POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert values["KRUNTIME_RUNTIME"] == "bash"
    assert values["KRUNTIME_WORKSPACE"] == "/workspace"
    assert json.loads(values["KRUNTIME_CAPACITY"]) == {"runs": 2}
    assert values["CELERY_BROKER_URL"] == "redis://broker:6379/0"
    # runtimed stops steps before the pod's grace ends, so its reports get out
    assert m["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30
    assert values["KRUNTIME_TERMINATION_GRACE_SECONDS"] == "25"


def test_runtimed_env_is_what_runtimed_config_accepts(tmp_path):
    from runtimed.config import PodConfig

    values = env(container(manifest(capacity={"resources": {"runs": 4}}), "runtimed"))
    resolved = {
        k: v
        for k, v in values.items()
        if isinstance(v, str) and k not in ("KRUNTIME_WORKSPACE", "CELERY_BROKER_URL")
    }
    resolved.update(
        KRUNTIME_POD_NAME="runtime-bash-abc",
        KRUNTIME_POD_UID=UID,
        KRUNTIME_POD_NAMESPACE="team-a",
        KRUNTIME_WORKSPACE=str(tmp_path),
        CELERY_BROKER_URL="redis://broker:6379/0",
    )
    config = PodConfig.from_env(resolved)
    assert (config.runtime, config.runs_capacity, config.termination_grace_seconds) == (
        "bash",
        4,
        25.0,
    )


def test_runtimed_executes_through_the_runtime_container_on_the_runtimes_port():
    assert env(container(manifest(), "runtimed"))["KRUNTIME_RUNTIME_SERVER_ADDRESS"] == (
        "127.0.0.1:9091"
    )
    custom = env(container(manifest(port=9092), "runtimed"))
    assert custom["KRUNTIME_RUNTIME_SERVER_ADDRESS"] == "127.0.0.1:9092"


def test_daemon_image_and_the_pods_grace_are_the_runtimes_own():
    s = spec(daemonImage="portal:2")
    s["template"]["spec"]["terminationGracePeriodSeconds"] = 60
    m = deployment_manifest("team-a", "bash", UID, s, OPTIONS)
    runtimed = container(m, "runtimed")
    assert runtimed["image"] == "portal:2"
    assert env(runtimed)["KRUNTIME_TERMINATION_GRACE_SECONDS"] == "55"


def test_capacity_comes_from_the_spec_and_the_templates_capacity_annotations():
    s = spec(capacity={"resources": {"runs": 3, "gpu": 1}})
    s["template"]["metadata"]["annotations"]["kruntimes.io/capacity.gpu"] = "2"
    values = env(container(deployment_manifest("team-a", "bash", UID, s, OPTIONS), "runtimed"))
    assert json.loads(values["KRUNTIME_CAPACITY"]) == {"runs": 3, "gpu": 2}


def test_the_broker_url_from_a_secret():
    options = RuntimedOptions(image="portal:1", broker_secret="broker", broker_secret_key="url")
    m = deployment_manifest("team-a", "bash", UID, spec(), options)
    assert env(container(m, "runtimed"))["CELERY_BROKER_URL"] == {
        "secretKeyRef": {"name": "broker", "key": "url"}
    }


def test_the_workspace_is_an_empty_dir_by_default_mounted_in_both_containers():
    m = manifest()
    assert volume(m, "workspace") == {"name": "workspace", "emptyDir": {}}
    for name in ("runtime", "runtimed"):
        assert {"name": "workspace", "mountPath": "/workspace"} in container(m, name)[
            "volumeMounts"
        ]


def test_the_workspace_is_the_runtimes_inline_volume_source():
    m = manifest(workspace={"persistentVolumeClaim": {"claimName": "cache"}})
    assert volume(m, "workspace") == {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": "cache"},
    }


def test_a_template_mount_at_the_workspace_path_is_replaced():
    s = spec()
    s["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "scratch", "mountPath": "/workspace"},
        {"name": "cfg", "mountPath": "/etc/cfg"},
    ]
    s["template"]["spec"]["volumes"] = [
        {"name": "cfg", "configMap": {"name": "c"}},
        {"name": "workspace", "hostPath": {"path": "/tmp"}},
    ]
    m = deployment_manifest("team-a", "bash", UID, s, OPTIONS)
    assert container(m, "runtime")["volumeMounts"] == [
        {"name": "cfg", "mountPath": "/etc/cfg"},
        {"name": "workspace", "mountPath": "/workspace"},
    ]
    assert [v["name"] for v in m["spec"]["template"]["spec"]["volumes"]] == ["cfg", "workspace"]
    assert volume(m, "workspace") == {"name": "workspace", "emptyDir": {}}


def test_a_filesystem_artifact_store_mounts_its_claim_where_runtimed_looks():
    m = manifest(artifactStore={"driver": "filesystem", "filesystem": {"volumeClaimName": "arts"}})
    assert volume(m, "artifact-store") == {
        "name": "artifact-store",
        "persistentVolumeClaim": {"claimName": "arts"},
    }
    runtimed = container(m, "runtimed")
    assert {
        "name": "artifact-store",
        "mountPath": "/var/run/kruntimes/artifact-volumes/arts",
    } in runtimed["volumeMounts"]
    assert env(runtimed)["KRUNTIME_ARTIFACT_VOLUMES"] == "/var/run/kruntimes/artifact-volumes"
    assert "artifact-store" not in str(container(m, "runtime"))


def test_an_s3_artifact_store_mounts_its_credentials_secret_where_runtimed_reads_secrets():
    store = {"driver": "s3", "s3": {"bucket": "b", "credentialsSecretName": "s3-creds"}}
    m = manifest(artifactStore=store)
    assert volume(m, "artifact-store-credentials") == {
        "name": "artifact-store-credentials",
        "secret": {"secretName": "s3-creds"},
    }
    runtimed = container(m, "runtimed")
    assert {
        "name": "artifact-store-credentials",
        "mountPath": "/var/run/kruntimes/secrets/s3-creds",
        "readOnly": True,
    } in runtimed["volumeMounts"]
    assert env(runtimed)["KRUNTIME_SECRETS_DIR"] == "/var/run/kruntimes/secrets"
    assert "KRUNTIME_ARTIFACT_VOLUMES" not in env(runtimed)


def test_no_artifact_store_no_store_volume():
    m = manifest()
    assert [v["name"] for v in m["spec"]["template"]["spec"]["volumes"]] == ["workspace"]


@pytest.mark.parametrize("replicas", [1, 3])
def test_replicas_follow_the_spec(replicas):
    assert manifest(replicas=replicas)["spec"]["replicas"] == replicas


def test_the_hash_says_whether_a_deployment_is_current():
    m = manifest()
    served = {**m, "spec": {**m["spec"], "strategy": {"type": "RollingUpdate"}}}  # defaults
    assert is_current(served, m)
    assert not is_current(served, manifest(replicas=2))
    assert not is_current(served, manifest(daemonImage="portal:2"))
    scaled_by_hand = {**served, "spec": {**served["spec"], "replicas": 5}}
    assert not is_current(scaled_by_hand, m)
    assert manifest() == m  # deterministic


@pytest.mark.django_db
def test_runtimed_serves_the_function_dataplane_on_the_pods_ip_with_its_namespaces_key():
    from scheduling import dataplane

    values = env(container(manifest(), "runtimed"))
    assert values["KRUNTIME_POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert values["KRUNTIME_DATAPLANE_ADDRESS"] == "$(KRUNTIME_POD_IP):9092"
    assert values["KRUNTIME_DATAPLANE_KEY"] == dataplane.key("team-a")
    assert dataplane.key("team-a") != dataplane.key("team-b")  # a tenant's key opens no other
    names = [item["name"] for item in container(manifest(), "runtimed")["env"]]
    # $(KRUNTIME_POD_IP) expands only from a variable listed before it
    assert names.index("KRUNTIME_POD_IP") < names.index("KRUNTIME_DATAPLANE_ADDRESS")
