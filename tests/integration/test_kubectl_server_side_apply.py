"""Server-side apply through the real clients against ``manage.py up --tls`` (issue 28): kubectl
``apply --server-side`` twice on examples/, a conflict with client-side apply named as
Kubernetes names it, ``--force-conflicts``, ``diff --server-side``, and the Python client's
``server_side_apply``. One portal for the module: a single test walks the whole story."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from kubernetes import config, dynamic

from tests.helpers.kubectl import kubectl, write_kubeconfig
from tests.helpers.runs import run_manifest

pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def ok(result) -> str:
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout


def test_server_side_apply_with_kubectl_and_the_python_client(portal_up_tls, admin_user, tmp_path):
    _, base, up = portal_up_tls
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig", server=base, ca_file=up.data_dir / "tls/ca.crt", user=admin_user
    )
    # examples/, twice in a row
    first = ok(kubectl(kubeconfig, "apply", "--server-side", "-f", str(EXAMPLES)))
    assert "run.kruntimes.io/hello serverside-applied" in first
    ok(kubectl(kubeconfig, "apply", "--server-side", "-f", str(EXAMPLES)))
    shown = yaml.safe_load(
        ok(
            kubectl(
                kubeconfig, "get", "run", "hello", "-n", "ci", "-o", "yaml", "--show-managed-fields"
            )
        )
    )
    managers = {(e["manager"], e["operation"]) for e in shown["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers

    # diff: nothing to show for an unchanged file; a changed field for a changed one
    ok(kubectl(kubeconfig, "diff", "--server-side", "-f", str(EXAMPLES / "00-namespace.yaml")))
    changed = yaml.safe_load((EXAMPLES / "30-run-hello.yaml").read_text())
    changed["metadata"]["labels"]["tier"] = "gold"
    diff = kubectl(kubeconfig, "diff", "--server-side", "-f", "-", stdin=json.dumps(changed))
    assert diff.returncode == 1, (diff.stdout, diff.stderr)
    assert "+    tier: gold" in diff.stdout

    # client-side apply, then a server-side apply changing what it set: a 409 naming it
    csa = run_manifest("csa", metadata={"labels": {"tier": "a"}})
    ok(kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(csa)))
    csa["metadata"]["labels"]["tier"] = "b"
    conflict = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=json.dumps(csa))
    assert conflict.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
        "kruntimes.io/v1alpha1: .metadata.labels.tier"
    ) in conflict.stderr
    forced = kubectl(
        kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=json.dumps(csa)
    )
    ok(forced)
    shown = json.loads(ok(kubectl(kubeconfig, "get", "run", "csa", "-o", "json")))
    assert shown["metadata"]["labels"]["tier"] == "b"

    # the Python client
    api = config.new_client_from_config(config_file=str(kubeconfig))
    runs = dynamic.DynamicClient(api).resources.get(api_version="kruntimes.io/v1alpha1", kind="Run")
    body = run_manifest("py", metadata={"labels": {"by": "python"}})
    applied = runs.server_side_apply(body=body, namespace="default", field_manager="py-client")
    assert applied.metadata.labels["by"] == "python"
    entries = [
        e for e in applied.to_dict()["metadata"]["managedFields"] if e["manager"] == "py-client"
    ]
    assert entries and entries[0]["operation"] == "Apply"
    again = runs.server_side_apply(body=body, namespace="default", field_manager="py-client")
    assert again.metadata.uid == applied.metadata.uid
