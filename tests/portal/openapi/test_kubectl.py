"""The real kubectl reads the OpenAPI documents: explain describes fields, and apply leaves
validation to the server (it finds fieldValidation on the kind's PATCH) instead of failing to
download openapi."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from portal.models import Namespace
from tests.helpers.kubectl import kubectl, token_proxy, write_proxy_kubeconfig

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]
WIDGET = """
apiVersion: testing.kruntimes.io/v1
kind: Widget
metadata: {{name: {name}, namespace: default}}
spec: {spec}
"""


@pytest.fixture
def kubeconfig(live_server, admin_user, tmp_path):
    Namespace.objects.get_or_create(name="default")  # a transactional test starts empty
    token = Token.objects.create(user=admin_user).key
    with token_proxy(live_server.url, token) as server:
        yield write_proxy_kubeconfig(tmp_path / "kubeconfig", server)


def test_explain_describes_a_runs_source(kubeconfig):
    done = kubectl(kubeconfig, "explain", "runs.spec.source", "--api-version=kruntimes.io/v1alpha1")
    assert done.returncode == 0, done.stderr
    assert "KIND:       Run" in done.stdout
    inline = done.stdout.split("inline\t<string>", 1)[1].split("\n\n", 1)[0]
    assert "source code" in inline and "<no description>" not in inline


@pytest.mark.parametrize(
    ("path", "api_version", "says"),
    [
        ("runs", "kruntimes.io/v1alpha1", "one execution of code on a Runtime"),
        ("runs.spec.mode", "kruntimes.io/v1alpha1", "exactly one of task or function"),
        ("runs.status", "kruntimes.io/v1alpha1", "set by the server"),
        ("runs.status.conditions", "kruntimes.io/v1alpha1", "one per condition type"),
        ("runs.metadata", "kruntimes.io/v1alpha1", "set by the server on create"),
        ("workflowruns.status.jobs", "kruntimes.io/v1alpha1", "The state of each job"),
        ("jobs.spec.resources", "execution.ayatori.ddupan.top/v1alpha1", "cpu and memory"),
        ("configmaps", "v1", "non-confidential configuration data"),
        ("rolebindings.subjects", "rbac.authorization.k8s.io/v1", "User, Group or"),
    ],
)
def test_explain_describes_every_field_it_lists(kubeconfig, path, api_version, says):
    """The field and each field it lists under FIELDS has a description of its own."""
    done = kubectl(kubeconfig, "explain", path, f"--api-version={api_version}")
    assert done.returncode == 0, done.stderr
    assert says in " ".join(done.stdout.split())
    assert "<no description>" not in done.stdout
    assert "FIELDS:" in done.stdout or "DESCRIPTION:" in done.stdout


def test_explain_marks_required_fields(kubeconfig):
    done = kubectl(kubeconfig, "explain", "runs.spec", "--api-version=kruntimes.io/v1alpha1")
    assert done.returncode == 0, done.stderr
    assert "runtime\t<string> -required-" in done.stdout


def test_apply_with_validation_creates_and_the_server_refuses_unknown_fields(kubeconfig):
    good = kubectl(kubeconfig, "apply", "-f", "-", stdin=WIDGET.format(name="w1", spec="{size: 3}"))
    assert good.returncode == 0, good.stderr
    assert "widget.testing.kruntimes.io/w1 created" in good.stdout
    bad = kubectl(
        kubeconfig,
        "apply",
        "--validate=strict",
        "-f",
        "-",
        stdin=WIDGET.format(name="w2", spec="{size: 3, bogus: 1}"),
    )
    assert bad.returncode != 0
    assert 'unknown field "bogus"' in bad.stderr
    assert "failed to download openapi" not in bad.stderr
