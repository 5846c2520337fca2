"""The real kubectl against ``manage.py up --tls``: an inline WorkflowRun of three jobs runs to
Succeeded on a bash Runtime, its status shows each job's ``pre`` and its ``snapshotName``,
``kubectl get controllerrevisions`` lists the snapshot, ``-o yaml`` shows its data, and a patch of
that data is refused with the field named."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.helpers.kubectl import kubectl, write_kubeconfig
from tests.helpers.live import ready_pods
from tests.helpers.waiting import wait_until

# the live portal of the kubectl tests (tests/integration), reused as it is
from tests.integration.conftest import portal_up_tls, up_env  # noqa: F401

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

RUNTIME = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "Runtime",
    "metadata": {"name": "bash", "namespace": "default"},
    "spec": {"template": {"spec": {"containers": [{"name": "runtime", "image": "bash:5"}]}}},
}


def jobs() -> dict:
    def one(name: str, *needs: str) -> dict:
        job = {"runs-on": "bash", "steps": [{"name": "s", "run": f"echo {name}"}]}
        return {**job, "needs": list(needs)} if needs else job

    return {
        "build": one("build"),
        "test": one("test", "build"),
        "ship": one("ship", "test", "build"),
    }


WFR = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "WorkflowRun",
    "metadata": {"name": "demo", "namespace": "default"},
    "spec": {"jobs": jobs()},
}


def test_kubectl_shows_pre_snapshot_name_and_the_snapshot(portal_up_tls, admin_user, tmp_path):  # noqa: F811
    _, base, up = portal_up_tls
    config = write_kubeconfig(
        tmp_path / "kubeconfig", server=base, ca_file=up.data_dir / "tls/ca.crt", user=admin_user
    )
    applied = kubectl(config, "apply", "-f", "-", stdin=yaml.safe_dump_all([RUNTIME, WFR]))
    assert applied.returncode == 0, applied.stderr
    assert wait_until(lambda: ready_pods() >= 1, timeout=60), "the Runtime Pod never got ready"
    waited = kubectl(
        config, "wait", "workflowrun/demo", "--for=jsonpath={.status.phase}=Succeeded",
        "--timeout=120s",
    )  # fmt: skip
    assert waited.returncode == 0, waited.stderr
    status = json.loads(kubectl(config, "get", "wfr", "demo", "-o", "json").stdout)["status"]
    print(json.dumps({k: status[k] for k in ("phase", "snapshotName")}))
    print(json.dumps({job: s.get("pre") for job, s in status["jobs"].items()}))
    assert status["jobs"]["test"]["pre"] == ["build"]
    assert status["jobs"]["ship"]["pre"] == ["build", "test"]
    assert "pre" not in status["jobs"]["build"]
    name = status["snapshotName"]
    listed = kubectl(config, "get", "controllerrevisions")
    print(listed.stdout)
    assert listed.returncode == 0, listed.stderr
    assert name in listed.stdout
    shown = kubectl(config, "get", "controllerrevision", name, "-o", "yaml")
    print(shown.stdout)
    revision = yaml.safe_load(shown.stdout)
    assert revision["revision"] == 1
    assert revision["data"]["spec"]["jobs"] == jobs()
    assert revision["metadata"]["ownerReferences"][0]["name"] == "demo"
    patched = kubectl(
        config, "patch", "controllerrevision", name, "--type=merge",
        "-p", '{"data": {"spec": {"inputs": {"x": "y"}}}}',
    )  # fmt: skip
    print(patched.stderr)
    assert patched.returncode != 0
    assert "data: field is immutable" in patched.stderr
