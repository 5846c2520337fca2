"""``manage.py demo``: the Workflow's result is its exit code, and a run that did not succeed
is reported without stopping the console it keeps serving."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management.base import OutputWrapper

from portal.management.commands.demo import Command

pytestmark = pytest.mark.django_db


def test_a_run_that_cannot_start_is_reported_and_its_code_returned():
    command = Command()
    command.stdout, command.stderr = OutputWrapper(StringIO()), OutputWrapper(StringIO())
    code = command._run("no-such-workflow", "default", timeout=5)
    assert code != 0
    assert "error:" in command.stderr._out.getvalue()
    assert "no-such-workflow" in command.stderr._out.getvalue()


def test_the_kubectl_lines_and_the_admins_kubeconfig(settings, tmp_path, admin_user):
    import stat

    import yaml

    settings.DATA_DIR = tmp_path
    command = Command()
    command.stdout, command.stderr = OutputWrapper(StringIO()), OutputWrapper(StringIO())
    command._kubectl_lines("admin", "https://127.0.0.1:8000", "ci")
    path = tmp_path / "kubeconfig"
    lines = command.stdout._out.getvalue().splitlines()
    assert lines == [f"export KUBECONFIG={path}", "kubectl get runs -n ci"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds a token
    config = yaml.safe_load(path.read_text())
    assert config["users"][0]["user"]["token"] == admin_user.auth_token.key
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:8000"


def test_a_wildcard_bind_is_reached_on_loopback():
    from portal.management.commands.demo import server_url

    assert server_url("0.0.0.0", 8080) == "https://127.0.0.1:8080"
    assert server_url("::1", 8000) == "https://[::1]:8000"
    assert server_url("10.0.0.5", 8000) == "https://10.0.0.5:8000"
