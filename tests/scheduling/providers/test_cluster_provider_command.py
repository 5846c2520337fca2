"""``manage.py cluster-provider`` as the Helm chart runs it: a process with a kubeconfig that
makes Deployments for Runtimes, keeps rows for their Pods as they come and go, and stops
promptly on SIGTERM."""

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

            def converged() -> bool:
                pods = cluster.pods("default", "runtime=bash")
                there = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
                rows = {p.name: str(p.uid) for p in RuntimePod.objects.all()}
                return len(pods) == 2 and rows == there

            assert wait_until(converged, timeout=20)
            gone = RuntimePod.objects.first().name
            cluster.delete_pod("default", gone)  # its ReplicaSet makes a new one
            assert wait_until(
                lambda: converged() and not RuntimePod.objects.filter(name=gone).exists(),
                timeout=20,
            )
            os.killpg(process.pid, signal.SIGTERM)
            assert process.wait(timeout=15) == 0
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            print(log.read_text(errors="replace")[-4000:])
    assert "cluster provider: stopped" in log.read_text()
