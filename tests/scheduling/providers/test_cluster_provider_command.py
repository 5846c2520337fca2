"""``manage.py cluster-provider`` as the Helm chart runs it: a process with a kubeconfig that
makes Deployments for Runtimes, rows for their Pods, and stops promptly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.db import connection

from scheduling.models import RuntimePod
from tests.helpers.kube import EmulatorServer
from tests.helpers.records import make_runtime
from tests.helpers.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
LABELS = {"app.kubernetes.io/managed-by": "kruntimes-portal", "runtime": "bash"}


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "test", "cluster": {"server": server}}],
                "users": [{"name": "test", "user": {}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
                "current-context": "test",
            }
        )
    )
    return path


@pytest.mark.processes
def test_the_command_keeps_deployments_and_pods_until_sigterm(transactional_db, tmp_path):
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {}})
    make_runtime(replicas=2)
    log = tmp_path / "provider.log"
    with EmulatorServer() as cluster, open(log, "wb") as out:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "KRUNTIMES_TEST_EAGER": "0",
            "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
            "KRUNTIMES_CLUSTER": "kubernetes",
            "KUBECONFIG": str(kubeconfig(tmp_path / "kubeconfig", cluster.url)),
            "KRUNTIMES_PROVIDER_SYNC_SECONDS": "0.5",
            "KRUNTIMES_RUNTIMED_BROKER_URL": "redis://broker.example:6379/0",
            "PYTHONPATH": str(ROOT),
        }
        process = subprocess.Popen(
            [sys.executable, "manage.py", "cluster-provider"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:

            def deployment():
                return cluster.store.find("apps", "deployments", "default", "runtime-bash")

            assert wait_until(deployment, timeout=20)
            assert deployment()["spec"]["replicas"] == 2
            pod = cluster.store.create(
                "",
                "pods",
                "default",
                {
                    "metadata": {"name": "runtime-bash-6f7d-abcde", "labels": LABELS},
                    "spec": {"containers": [{"name": "runtime", "image": "bash:5"}]},
                },
            )
            assert wait_until(lambda: RuntimePod.objects.exists(), timeout=20)
            assert str(RuntimePod.objects.get().uid) == pod["metadata"]["uid"]
            cluster.store.delete("", "pods", "default", "runtime-bash-6f7d-abcde")
            wait_until(lambda: not RuntimePod.objects.exists(), timeout=20)
            os.killpg(process.pid, signal.SIGTERM)
            assert process.wait(timeout=15) == 0
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            print(log.read_text(errors="replace")[-4000:])
    assert "cluster provider: stopped" in log.read_text()
