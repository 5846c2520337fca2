"""The real kubectl prints every cause of a refused update: ``kubectl apply`` of a Run whose
mode changed and whose ttlSecondsAfterFinished breaks its rule names both fields, against
``manage.py up --tls`` (kubectl sends its token only over TLS)."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.kubectl import kubectl, write_kubeconfig

# the live portal of the kubectl tests (tests/integration), reused as it is
from tests.integration.conftest import portal_up_tls, up_env  # noqa: F401

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def run(mode: dict, **spec) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Run",
            "metadata": {"name": "r", "namespace": "default"},
            "spec": {"runtime": "bash", "source": {"inline": "echo ok"}, "mode": mode, **spec},
        }
    )


def test_kubectl_apply_prints_the_immutability_and_the_field_rule(
    portal_up_tls,  # noqa: F811
    admin_user,
    tmp_path,
):
    session, base, up = portal_up_tls
    config = write_kubeconfig(
        tmp_path / "kubeconfig", server=base, ca_file=up.data_dir / "tls/ca.crt", user=admin_user
    )
    manifest = tmp_path / "run.yaml"
    manifest.write_text(run({"task": {}}))
    applied = kubectl(config, "apply", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr

    manifest.write_text(run({"task": {"args": ["other"]}}, ttlSecondsAfterFinished=-1))
    refused = kubectl(config, "apply", "-f", str(manifest))
    print(refused.stderr)  # the report quotes kubectl's lines
    assert refused.returncode != 0
    assert 'The Run "r" is invalid' in refused.stderr
    lines = refused.stderr.splitlines()
    assert any(line.startswith("* spec.ttlSecondsAfterFinished: ") for line in lines), lines
    assert "* spec.mode: field is immutable" in lines
