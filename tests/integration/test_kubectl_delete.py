"""The real kubectl's delete against a live portal: kubectl sends its DeleteOptions in the
body, so ``--dry-run=server`` must leave the object, ``--cascade=orphan`` must orphan the
children and ``--grace-period`` must be accepted (issue 28, item 1)."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token

from portal.models import Namespace
from tests.helpers.kubectl import kubectl, ok, token_proxy, write_proxy_kubeconfig
from tests.helpers.runs import run_manifest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def kubeconfig(live_server, admin_user, tmp_path):
    Namespace.objects.get_or_create(name="default")  # a transactional test starts empty
    token = Token.objects.create(user=admin_user).key
    with token_proxy(live_server.url, token) as server:
        yield write_proxy_kubeconfig(tmp_path / "kubeconfig", server)


def create(config, manifest: dict) -> dict:
    ok(kubectl(config, "create", "-f", "-", stdin=json.dumps(manifest)))
    name = manifest["metadata"]["name"]
    return json.loads(ok(kubectl(config, "get", "run", name, "-o", "json")))


def run_names(config) -> list[str]:
    listed = json.loads(ok(kubectl(config, "get", "runs", "-o", "json")))
    return sorted(item["metadata"]["name"] for item in listed["items"])


def test_delete_dry_run_server_leaves_the_run(kubeconfig):
    create(kubeconfig, run_manifest("hello"))
    out = ok(kubectl(kubeconfig, "delete", "run", "hello", "--dry-run=server"))
    assert out.strip() == 'run.kruntimes.io "hello" deleted from default namespace (server dry run)'
    assert run_names(kubeconfig) == ["hello"]
    shown = json.loads(ok(kubectl(kubeconfig, "get", "run", "hello", "-o", "json")))
    assert "deletionTimestamp" not in shown["metadata"]


def test_delete_all_dry_run_server_leaves_every_run(kubeconfig):
    for name in ("one", "two"):
        create(kubeconfig, run_manifest(name))
    out = ok(kubectl(kubeconfig, "delete", "runs", "--all", "--dry-run=server"))
    assert out.splitlines() == [
        'run.kruntimes.io "one" deleted from default namespace (server dry run)',
        'run.kruntimes.io "two" deleted from default namespace (server dry run)',
    ]
    assert run_names(kubeconfig) == ["one", "two"]


def test_delete_cascade_orphan_keeps_the_children(kubeconfig):
    parent = create(kubeconfig, run_manifest("parent"))
    ref = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "name": "parent",
        "uid": parent["metadata"]["uid"],
    }
    create(kubeconfig, run_manifest("child", metadata={"ownerReferences": [ref]}))
    dry = ok(kubectl(kubeconfig, "delete", "run", "parent", "--cascade=orphan", "--dry-run=server"))
    assert (
        dry.strip() == 'run.kruntimes.io "parent" deleted from default namespace (server dry run)'
    )
    child = json.loads(ok(kubectl(kubeconfig, "get", "run", "child", "-o", "json")))
    assert child["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"]

    out = ok(kubectl(kubeconfig, "delete", "run", "parent", "--cascade=orphan", "--wait=false"))
    assert out.strip() == 'run.kruntimes.io "parent" deleted from default namespace'
    child = json.loads(ok(kubectl(kubeconfig, "get", "run", "child", "-o", "json")))
    assert "ownerReferences" not in child["metadata"]


@pytest.mark.parametrize("force", [False, True], ids=["grace-0", "force-grace-0"])
def test_delete_with_a_grace_period_of_zero(kubeconfig, force):
    create(kubeconfig, run_manifest("quick"))
    args = ["delete", "run", "quick", "--grace-period=0", "--wait=false"]
    out = ok(kubectl(kubeconfig, *args, *(["--force"] if force else [])))
    assert 'run.kruntimes.io "quick"' in out and "deleted" in out
    shown = kubectl(kubeconfig, "get", "run", "quick", "-o", "json")
    # gone, or held only by its own finalizers while its controller cleans up
    assert shown.returncode != 0 or json.loads(shown.stdout)["metadata"]["deletionTimestamp"]
