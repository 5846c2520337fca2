"""The real kubectl prints the script injection warning: ``kubectl apply`` of a Workflow with
``${{ inputs.who }}`` inside ``run``, against ``manage.py up --tls`` with a kubeconfig as
``manage.py kubeconfig`` writes it (kubectl sends its token only over TLS), shows
``Warning: spec.jobs.a.steps[0].run: …`` on stderr; the same Workflow using ``env:`` shows
none."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.kubectl import kubectl, write_kubeconfig

# the live portal of the kubectl tests (tests/integration), reused as it is
from tests.integration.conftest import portal_up_tls, up_env  # noqa: F401

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

WARNING_LINE = (
    "Warning: spec.jobs.a.steps[0].run: ${{ inputs.who }} is pasted into the script text, so a "
    "value holding shell syntax runs as code (script injection); "
    'use env: {WHO: "${{ inputs.who }}"} and "$WHO" in run'
)


def greet(step: dict) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": "greet", "namespace": "default"},
            "spec": {
                "inputs": {"who": {"type": "string", "default": "world"}},
                "jobs": {"a": {"runs-on": "bash", "steps": [{"name": "hi", **step}]}},
            },
        }
    )


def test_kubectl_apply_prints_the_injection_warning(portal_up_tls, admin_user, tmp_path):  # noqa: F811
    session, base, up = portal_up_tls
    config = write_kubeconfig(
        tmp_path / "kubeconfig", server=base, ca_file=up.data_dir / "tls/ca.crt", user=admin_user
    )
    manifest = tmp_path / "greet.yaml"
    manifest.write_text(greet({"run": 'echo "hello ${{ inputs.who }}"'}))
    applied = kubectl(config, "apply", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    assert "workflow.kruntimes.io/greet created" in applied.stdout
    print(applied.stderr)  # the report quotes kubectl's line
    assert WARNING_LINE in applied.stderr.splitlines()

    manifest.write_text(greet({"env": {"WHO": "${{ inputs.who }}"}, "run": 'echo "hello $WHO"'}))
    safe = kubectl(config, "apply", "-f", str(manifest))
    assert safe.returncode == 0, safe.stderr
    assert "workflow.kruntimes.io/greet configured" in safe.stdout
    assert "Warning" not in safe.stderr
