"""PodConfig: the pod's identity and broker wiring from the environment."""

from __future__ import annotations

import pytest

from runtimed import protocol
from runtimed.app import make_app
from runtimed.config import ConfigError, PodConfig


def pod_env(tmp_path, **overrides) -> dict[str, str]:
    env = {
        "KRUNTIME_POD_NAME": "pod-a",
        "KRUNTIME_POD_UID": "1234",
        "KRUNTIME_POD_NAMESPACE": "ci",
        "KRUNTIME_RUNTIME": "bash",
        "KRUNTIME_WORKSPACE": str(tmp_path / "ws"),
        "KRUNTIMES_BROKER_DIR": str(tmp_path / "broker"),
    }
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


def test_defaults_and_filesystem_broker(tmp_path):
    config = PodConfig.from_env(pod_env(tmp_path))
    assert config.queue == "runtimed.pod-a"
    assert config.capacity == {"runs": 2} and config.runs_capacity == 2
    assert config.heartbeat_seconds == 5.0
    assert config.termination_grace_seconds == 25.0
    assert config.broker_url == "filesystem://"
    assert config.workspace.is_dir()  # created
    broker = tmp_path / "broker"
    assert {p.name for p in broker.iterdir()} == {"queue", "processed", "control"}
    assert config.transport_options() == {
        "data_folder_in": str(broker / "queue"),
        "data_folder_out": str(broker / "queue"),
        "processed_folder": str(broker / "processed"),
        "store_processed": False,
        "control_folder": str(broker / "control"),
        "polling_interval": 0.05,
    }


def test_artifact_wiring_defaults_and_overrides(tmp_path):
    default = PodConfig.from_env(pod_env(tmp_path))
    assert (default.artifact_volumes, default.secrets_dir) == (None, None)
    assert (default.max_artifact_bytes, default.max_run_artifact_bytes) == (1 << 30, 10 << 30)
    config = PodConfig.from_env(
        pod_env(
            tmp_path,
            KRUNTIME_ARTIFACT_VOLUMES="/mnt/artifacts",
            KRUNTIME_SECRETS_DIR="/mnt/secrets",
            KRUNTIME_ARTIFACT_MAX_BYTES="1024",
            KRUNTIME_RUN_ARTIFACT_MAX_BYTES="4096",
        )
    )
    assert (str(config.artifact_volumes), str(config.secrets_dir)) == (
        "/mnt/artifacts",
        "/mnt/secrets",
    )
    assert (config.max_artifact_bytes, config.max_run_artifact_bytes) == (1024, 4096)


def test_redis_broker_needs_no_folder(tmp_path):
    config = PodConfig.from_env(
        pod_env(
            tmp_path,
            CELERY_BROKER_URL="redis://h:6379/1",
            KRUNTIMES_BROKER_DIR=None,
            KRUNTIME_CAPACITY='{"runs": 4, "gpu": 1}',
            KRUNTIME_HEARTBEAT_SECONDS="0.5",
            KRUNTIME_POD_INCARNATION="3",
        )
    )
    assert config.pod_incarnation == 3
    assert config.broker_dir is None
    assert config.transport_options() == {"visibility_timeout": 3600}
    assert config.capacity == {"runs": 4, "gpu": 1}
    assert config.heartbeat_seconds == 0.5


def test_missing_identity_is_named(tmp_path):
    with pytest.raises(ConfigError, match="KRUNTIME_POD_UID, KRUNTIME_RUNTIME"):
        PodConfig.from_env(pod_env(tmp_path, KRUNTIME_POD_UID=None, KRUNTIME_RUNTIME=""))


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"KRUNTIME_WORKSPACE": "relative/ws"}, "absolute"),
        ({"KRUNTIMES_BROKER_DIR": None}, "KRUNTIMES_BROKER_DIR"),
        ({"KRUNTIMES_BROKER_DIR": "rel"}, "absolute"),
        ({"KRUNTIME_CAPACITY": "[1]"}, "JSON object"),
        ({"KRUNTIME_CAPACITY": "{"}, "not JSON"),
        ({"KRUNTIME_CAPACITY": '{"runs": -1}'}, "non-negative integer"),
        ({"KRUNTIME_HEARTBEAT_SECONDS": "0"}, "positive"),
        ({"KRUNTIME_TERMINATION_GRACE_SECONDS": "-1"}, "positive"),
        ({"KRUNTIME_HEARTBEAT_SECONDS": "soon"}, "number"),
        ({"KRUNTIME_ARTIFACT_VOLUMES": "rel/volumes"}, "KRUNTIME_ARTIFACT_VOLUMES must be an abs"),
        ({"KRUNTIME_SECRETS_DIR": "secrets"}, "KRUNTIME_SECRETS_DIR must be an absolute"),
        ({"KRUNTIME_ARTIFACT_MAX_BYTES": "0"}, "positive number of bytes"),
        ({"KRUNTIME_RUN_ARTIFACT_MAX_BYTES": "1GiB"}, "positive number of bytes"),
        ({"KRUNTIME_POD_INCARNATION": "-1"}, "KRUNTIME_POD_INCARNATION must be a non-negative"),
    ],
)
def test_bad_values_are_clear_errors(tmp_path, overrides, match):
    with pytest.raises(ConfigError, match=match):
        PodConfig.from_env(pod_env(tmp_path, **overrides))


def test_app_consumes_only_its_queue_and_never_acks_late(tmp_path):
    app = make_app(PodConfig.from_env(pod_env(tmp_path)))
    conf = app.conf
    assert [q.name for q in conf.task_queues] == ["runtimed.pod-a"]
    assert conf.task_default_queue == "runtimed.pod-a"
    assert conf.task_acks_late is False
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    # every task the control plane sends a pod (runtimed.protocol)
    assert {
        protocol.EXECUTE_RUN_TASK,
        protocol.CANCEL_RUN_TASK,
        protocol.CONFIRM_REPORTS_TASK,
    } <= set(app.tasks)
    assert conf.broker_transport == "runtimed.fstransport:Transport"  # atomic messages


def test_the_termination_grace_comes_from_the_environment(tmp_path):
    env = pod_env(tmp_path, KRUNTIME_TERMINATION_GRACE_SECONDS="7.5")
    assert PodConfig.from_env(env).termination_grace_seconds == 7.5
