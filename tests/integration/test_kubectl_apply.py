"""Client-side ``kubectl apply`` and ``kubectl diff`` against ``manage.py up --tls`` (issue 28).

A second ``kubectl apply`` of the same files patches every object: built-in kinds (Namespace,
RBAC) with a strategic merge patch, kruntimes kinds with a JSON merge patch; ``kubectl diff``
sends the same patches with ``dryRun=All`` and compares. The Python ``kubernetes`` client's
``patch_namespace`` sends a strategic merge patch too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from tests.helpers.kubectl import kubectl, write_kubeconfig

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "1"}


@pytest.fixture
def kubeconfig(portal_up_tls, admin_user, tmp_path):
    _, base, up = portal_up_tls
    return write_kubeconfig(
        tmp_path / "kubeconfig", server=base, ca_file=up.data_dir / "tls/ca.crt", user=admin_user
    )


def ok(result) -> str:
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout


def get(kubeconfig, *args: str) -> dict:
    return json.loads(ok(kubectl(kubeconfig, "get", *args, "-o", "json")))


def applies_examples_twice(kubeconfig) -> None:
    ok(kubectl(kubeconfig, "apply", "-f", str(EXAMPLES)))
    again = ok(kubectl(kubeconfig, "apply", "-f", str(EXAMPLES)))
    assert "namespace/ci unchanged" in again
    assert "clusterrole.rbac.authorization.k8s.io/kruntimes-author unchanged" in again
    assert "rolebinding.rbac.authorization.k8s.io/ci-authors unchanged" in again


def diffs_nothing_then_the_change(kubeconfig, tmp_path: Path) -> None:
    assert ok(kubectl(kubeconfig, "diff", "-f", str(EXAMPLES))) == ""
    changed = tmp_path / "changed"
    shutil.copytree(EXAMPLES, changed)
    namespace = changed / "00-namespace.yaml"
    document = yaml.safe_load(namespace.read_text())
    document["metadata"]["labels"]["team"] = "runtime"
    namespace.write_text(yaml.safe_dump(document))
    rbac = changed / "10-rbac.yaml"
    roles = list(yaml.safe_load_all(rbac.read_text()))
    roles[0]["rules"] = roles[0]["rules"][:1]  # a list with no patch strategy: replaced
    rbac.write_text(yaml.safe_dump_all(roles))
    before = get(kubeconfig, "ns", "ci")["metadata"]["resourceVersion"]

    diff = kubectl(kubeconfig, "diff", "-f", str(changed))
    assert diff.returncode == 1, (diff.stdout, diff.stderr)
    assert "-    team: platform\n+    team: runtime" in diff.stdout
    assert "\n-  - persistentworkspaces/use\n" in diff.stdout  # the rules list, replaced
    # the diff's dry-run patches stored nothing
    assert get(kubeconfig, "ns", "ci")["metadata"]["resourceVersion"] == before
    assert get(kubeconfig, "ns", "ci")["metadata"]["labels"]["team"] == "platform"

    applied = ok(kubectl(kubeconfig, "apply", "-f", str(changed)))
    assert "namespace/ci configured" in applied
    assert get(kubeconfig, "ns", "ci")["metadata"]["labels"]["team"] == "runtime"
    assert len(get(kubeconfig, "clusterrole", "kruntimes-author")["rules"]) == 1
    assert ok(kubectl(kubeconfig, "diff", "-f", str(changed))) == ""


def applies_a_list(kubeconfig) -> None:
    """kubectl validates a List's items client-side against /openapi/v2, asked for as
    protobuf only: a JSON-only server fails the apply with a 406."""
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "listed"}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "listed"},
                "data": {"a": "1"},
            },
        ],
    }
    for _ in range(2):
        ok(kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(listed)))
    listed["items"][1]["data"] = {"a": "2"}
    assert "configmap/settings configured" in ok(
        kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(listed))
    )
    assert get(kubeconfig, "configmap", "settings", "-n", "listed")["data"] == {"a": "2"}


def python_client_patches_a_namespace(kubeconfig) -> None:
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    patched = api.patch_namespace(
        "ci", {"metadata": {"labels": {"patched": "yes", "team": None}, "finalizers": ["x/y"]}}
    )
    assert patched.metadata.labels["patched"] == "yes" and "team" not in patched.metadata.labels
    again = api.patch_namespace("ci", {"metadata": {"finalizers": ["x/z"]}})
    # metadata.finalizers merges (patchStrategy merge): both stay
    assert again.metadata.finalizers == ["x/y", "x/z"]
    api.patch_namespace("ci", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/y", "x/z"]}})
    assert not api.read_namespace("ci").metadata.finalizers


def test_kubectl_apply_diff_and_strategic_merge_patch(kubeconfig, tmp_path):
    """One server for the module: the steps share it, in order."""
    applies_examples_twice(kubeconfig)
    diffs_nothing_then_the_change(kubeconfig, tmp_path)
    applies_a_list(kubeconfig)
    python_client_patches_a_namespace(kubeconfig)
