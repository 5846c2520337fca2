"""kubectl tells the truth, checked with kubectl alone against ``manage.py up --tls``: the list
of issue 28, each command with the line it prints. The only other client is the test's own
setup (two users and their kubeconfigs); everything the test asserts, kubectl printed.

One server for the whole walk (starting one costs seconds), so it is one test, in the order a
new user would meet these commands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.kubectl import kubectl, up_kubeconfig

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "1"}


@pytest.fixture
def users(portal_up_tls, admin_kubeconfig, tmp_path, django_user_model):
    """The admin's and dev's kubeconfigs (dev: no grant at all)."""
    dev_user = django_user_model.objects.create_user("dev")
    return admin_kubeconfig, up_kubeconfig(tmp_path / "dev", portal_up_tls, dev_user)


def said(config: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    """kubectl ARGS, printed as a transcript line; exits ``code`` and warns of nothing."""
    result: subprocess.CompletedProcess[str] = kubectl(config, *args, stdin=stdin)
    out = (result.stdout + result.stderr).strip()
    print(f"$ kubectl {' '.join(args)}\n{out}\n")
    assert result.returncode == code, (args, result.stdout, result.stderr)
    warned = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert not warned, (args, warned)
    return out


def test_kubectl_tells_the_truth(users, tmp_path):
    admin, dev = users

    # imperative creates of built-in kinds (kubectl sends them as protobuf)
    assert said(admin, "create", "ns", "team") == "namespace/team created"
    said(admin, "create", "configmap", "settings", "-n", "team", "--from-literal=a=b")
    said(admin, "create", "secret", "generic", "token", "-n", "team", "--from-literal=t=s3")
    said(admin, "create", "role", "run-reader", "-n", "team", "--verb=get,list",
         "--resource=runs.kruntimes.io")  # fmt: skip
    said(admin, "create", "rolebinding", "bob-reads", "-n", "team", "--role=run-reader",
         "--user=bob")  # fmt: skip
    configmap = json.loads(said(admin, "get", "configmap", "settings", "-n", "team", "-o", "json"))
    assert configmap["data"] == {"a": "b"}

    # apply: client-side twice, server-side twice, diff clean after it
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES, examples)
    for _ in range(2):
        said(admin, "apply", "-f", str(examples))
    for _ in range(2):
        said(admin, "apply", "--server-side", "-f", str(examples))
    said(admin, "diff", "-f", str(examples))  # exit 0: nothing differs

    # a field another manager changed is a conflict, named, until forced
    said(admin, "label", "runtime", "bash", "-n", "ci", "tier=gold", "--overwrite")
    runtime = examples / "20-runtime-bash.yaml"
    text = runtime.read_text()
    assert "labels:" not in text.split("spec:")[0]
    runtime.write_text(
        text.replace("  name: bash\n", "  name: bash\n  labels: {tier: silver}\n", 1)
    )
    conflict = said(admin, "apply", "--server-side", "-f", str(runtime), code=1)
    assert "conflict" in conflict.lower() and "kubectl-label" in conflict
    assert ".metadata.labels.tier" in conflict
    said(admin, "apply", "--server-side", "--force-conflicts", "-f", str(runtime))
    labels = said(admin, "get", "runtime", "bash", "-n", "ci", "-o", "jsonpath={.metadata.labels}")
    assert json.loads(labels)["tier"] == "silver"

    # a server-side dry-run delete deletes nothing
    deleted = said(admin, "delete", "run", "hello", "-n", "ci", "--dry-run=server")
    assert "(server dry run)" in deleted
    said(admin, "get", "run", "hello", "-n", "ci")

    # --as is impersonation: refused without the grant, bob's view with it
    refused = said(dev, "get", "runs", "-n", "team", "--as", "bob", code=1)
    assert 'User "dev" cannot impersonate resource "users"' in refused
    assert said(admin, "auth", "can-i", "list", "runs", "-n", "team", "--as", "bob") == "yes"
    no = said(admin, "auth", "can-i", "create", "runs", "-n", "team", "--as", "bob", code=1)
    assert no.startswith("no")
    said(admin, "create", "clusterrole", "impersonate-bob", "--verb=impersonate",
         "--resource=users", "--resource-name=bob")  # fmt: skip
    said(admin, "create", "clusterrolebinding", "dev-as-bob", "--clusterrole=impersonate-bob",
         "--user=dev")  # fmt: skip
    assert "No resources found" in said(dev, "get", "runs", "-n", "team", "--as", "bob")
    forbidden = said(dev, "get", "runs", "-n", "ci", "--as", "bob", code=1)
    assert 'User "bob" cannot list resource "runs"' in forbidden

    # who am I, what is this field, what is there
    assert "dev" in said(dev, "auth", "whoami")
    explained = said(admin, "explain", "runs.spec.runtime")
    assert "<no description>" not in explained and "DESCRIPTION" in explained
    assert "run.kruntimes.io/hello" in said(admin, "get", "all", "-n", "ci", "-o", "name")
