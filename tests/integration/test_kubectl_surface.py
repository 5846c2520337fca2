"""The rest of kubectl's surface, through kubectl alone against ``manage.py up --tls``:
``auth whoami`` (SelfSubjectReview), ``get all`` and ``get kruntimes`` (discovery categories),
and no command warning about the server's version (``/version`` emulates kubectl's minor)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from tests.helpers.kubectl import kubectl, up_kubeconfig
from tests.helpers.live import RUNTIME, script_run
from tests.helpers.workflows import action_manifest

pytestmark = pytest.mark.django_db(transaction=True)
IN_ALL = {
    "run.kruntimes.io",
    "runtime.kruntimes.io",
    "runtimepod.kruntimes.io",
    "workflow.kruntimes.io",
    "workflowrun.kruntimes.io",
}


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "1"}


@pytest.fixture
def live(portal_up_tls, admin_user, tmp_path, django_user_model):
    from django.contrib.auth.models import Group

    admin = up_kubeconfig(tmp_path / "admin", portal_up_tls, admin_user)
    bob = django_user_model.objects.create_user("bob", password="x")
    bob.groups.add(Group.objects.create(name="runners"))
    return admin, up_kubeconfig(tmp_path / "bob", portal_up_tls, bob), bob


def run(config, *args: str, stdin: str | None = None) -> str:
    """kubectl ARGS: exits 0 and prints no warning (the version skew one above all)."""
    result: subprocess.CompletedProcess[str] = kubectl(config, *args, stdin=stdin)
    print("$ kubectl", *args, "\n" + result.stdout + result.stderr)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    assert "warning" not in result.stderr.lower(), (args, result.stderr)
    return result.stdout


def test_whoami_get_all_and_get_kruntimes_with_no_warning(live):
    admin, other, bob = live

    version = json.loads(run(admin, "version", "-o", "json"))
    client, server = version["clientVersion"], version["serverVersion"]
    assert server["minor"] == client["minor"] and server["emulationMinor"] == client["minor"]
    run(admin, "version")  # the human form is where kubectl prints the skew warning

    table = run(other, "auth", "whoami")
    assert "bob" in table and "[runners system:authenticated]" in table, table
    answer = json.loads(run(other, "auth", "whoami", "-o", "json"))
    assert answer["status"]["userInfo"] == {
        "username": "bob",
        "uid": str(bob.pk),
        "groups": ["runners", "system:authenticated"],
    }

    impersonated = run(admin, "auth", "whoami", "--as", "carol", "--as-group", "devs")
    assert "carol" in impersonated and "[devs system:authenticated]" in impersonated

    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "replicas": 1}}
    manifests = [runtime, script_run("hello", "echo hello"), action_manifest("greet")]
    applied = run(
        admin,
        "apply",
        "-n",
        "default",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(manifests),
    )
    assert "action.kruntimes.io/greet created" in applied, applied

    # what ``all`` holds (a Runtime Pod may have come up too), not the Action
    everything = set(run(admin, "get", "all", "-n", "default", "-o", "name").split())
    assert {"runtime.kruntimes.io/bash", "run.kruntimes.io/hello"} <= everything
    assert {name.split("/")[0] for name in everything} <= IN_ALL, everything
    table = run(admin, "get", "all", "-n", "default")
    assert "run.kruntimes.io/hello" in table and "runtime.kruntimes.io/bash" in table

    kinds = set(run(admin, "get", "kruntimes", "-n", "default", "-o", "name").split())
    assert {
        "runtime.kruntimes.io/bash",
        "run.kruntimes.io/hello",
        "action.kruntimes.io/greet",
    } <= kinds
    assert {name.split("/")[0] for name in kinds} <= IN_ALL | {"action.kruntimes.io"}, kinds

    listed = run(admin, "api-resources", "--categories=all", "-o", "name")
    assert set(listed.split()) == {
        "runs.kruntimes.io",
        "runtimes.kruntimes.io",
        "runtimepods.kruntimes.io",
        "workflows.kruntimes.io",
        "workflowruns.kruntimes.io",
    }
