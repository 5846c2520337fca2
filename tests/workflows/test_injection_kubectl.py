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


def calling_itself(name: str, target: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobs": {"a": {"uses": target}}},
        }
    )


def test_kubectl_is_refused_a_self_calling_workflow_and_a_live_one_stops_at_ten(
    portal_up_tls,  # noqa: F811
    admin_user,
    tmp_path,
):
    """The issue's h6: refused at admission; written past it, the live portal runs exactly
    MAX_CALL_DEPTH WorkflowRuns and fails them (it made 702 in 45 s before)."""
    import time

    from tests.helpers.waiting import wait_until
    from workflows.calls import MAX_CALL_DEPTH
    from workflows.models import Workflow, WorkflowRun

    session, base, up = portal_up_tls
    config = write_kubeconfig(
        tmp_path / "kubeconfig", server=base, ca_file=up.data_dir / "tls/ca.crt", user=admin_user
    )
    manifest = tmp_path / "h6.yaml"
    manifest.write_text(calling_itself("h6", "h6"))
    refused = kubectl(config, "apply", "-f", str(manifest))
    print(refused.stderr)
    assert refused.returncode != 0
    assert 'spec.jobs.a.uses: Invalid value: "h6": the call cycle h6 → h6' in refused.stderr

    manifest.write_text(calling_itself("h6", "other"))
    assert kubectl(config, "apply", "-f", str(manifest)).returncode == 0
    Workflow.objects.filter(name="h6").update(spec={"jobs": {"a": {"uses": "h6"}}})
    started = time.monotonic()
    run = kubectl(config, "create", "-f", "-", stdin=yaml.safe_dump(START))
    assert run.returncode == 0, run.stderr
    root = lambda: WorkflowRun.objects.filter(name="root").first()  # noqa: E731
    assert wait_until(lambda: root() is not None and root().phase == "Failed", timeout=120)
    print(
        f"{WorkflowRun.objects.count()} WorkflowRuns, root Failed in {time.monotonic() - started:.1f} s"
    )
    time.sleep(2)  # nothing more comes
    assert WorkflowRun.objects.count() == MAX_CALL_DEPTH
    assert set(WorkflowRun.objects.values_list("phase", flat=True)) == {"Failed"}
    print(root().status["message"][:300])


START = {
    "apiVersion": "kruntimes.io/v1alpha1",
    "kind": "WorkflowRun",
    "metadata": {"name": "root", "namespace": "default"},
    "spec": {"workflowRef": {"name": "h6"}},
}
