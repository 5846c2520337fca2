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
