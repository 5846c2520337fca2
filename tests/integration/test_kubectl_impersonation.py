"""``kubectl --as`` against ``manage.py up --tls``: impersonation is refused without an
``impersonate`` grant, and with one kubectl sees and is answered exactly as the impersonated
user (lists, ``auth can-i``)."""

from __future__ import annotations

import pytest

from tests.helpers.kubectl import kubectl, write_kubeconfig
from tests.helpers.live import API, script_run

pytestmark = pytest.mark.django_db(transaction=True)

RBAC = "/apis/rbac.authorization.k8s.io/v1"
RUNS = {"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["get", "list", "create"]}


def user_subject(name: str) -> list[dict]:
    return [{"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}]


def role_and_binding(session, base, kind, name, rules, subject, namespace=""):
    scope = f"/namespaces/{namespace}" if namespace else ""
    binding = "RoleBinding" if namespace else "ClusterRoleBinding"
    role = {"kind": kind, "metadata": {"name": name}, "rules": rules}
    made = session.post(f"{base}{RBAC}{scope}/{kind.lower()}s", json=role, timeout=10)
    assert made.status_code == 201, made.text
    body = {
        "kind": binding,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": user_subject(subject),
    }
    bound = session.post(f"{base}{RBAC}{scope}/{binding.lower()}s", json=body, timeout=10)
    assert bound.status_code == 201, bound.text


def shown(result) -> str:
    """What kubectl printed: its one answer line (stdout, else stderr)."""
    return (result.stdout.strip() or result.stderr.strip()).splitlines()[0]


@pytest.fixture
def cluster(portal_up_tls, admin_user, django_user_model, tmp_path):
    """The admin's and dev's kubeconfigs; bob may list and create runs in default, where
    one Run is his to see."""
    session, base, up = portal_up_tls
    ca = up.data_dir / "tls/ca.crt"
    admin = write_kubeconfig(tmp_path / "admin", server=base, ca_file=ca, user=admin_user)
    dev_user = django_user_model.objects.create_user("dev")
    dev = write_kubeconfig(tmp_path / "dev", server=base, ca_file=ca, user=dev_user)
    role_and_binding(session, base, "Role", "bob-runs", [RUNS], "bob", namespace="default")
    created = session.post(f"{base}{API}/runs", json=script_run("bobs-run", "true"), timeout=10)
    assert created.status_code == 201, created.text
    return session, base, admin, dev


def test_get_runs_as_someone_is_refused_without_the_grant_and_theirs_with_it(cluster):
    session, base, admin, dev = cluster
    as_admin = kubectl(admin, "get", "runs", "--as", "nobody")
    print("kubectl get runs --as nobody (admin) ->", shown(as_admin))
    assert as_admin.returncode == 1
    assert 'User "nobody" cannot list resource "runs"' in as_admin.stderr

    refused = kubectl(dev, "get", "runs", "--as", "bob")
    print("kubectl get runs --as bob (dev, no grant) ->", shown(refused))
    assert refused.returncode == 1
    assert (
        'Error from server (Forbidden): users "bob" is forbidden: User "dev" cannot impersonate '
        'resource "users" in API group "" at the cluster scope'
    ) in refused.stderr

    grant = {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
             "resourceNames": ["bob"]}  # fmt: skip
    role_and_binding(session, base, "ClusterRole", "dev-as-bob", [grant], "dev")
    as_bob = kubectl(dev, "get", "runs", "--as", "bob", "-o", "name")
    print("kubectl get runs --as bob -o name (dev, granted) ->", shown(as_bob))
    assert as_bob.returncode == 0, as_bob.stderr
    assert as_bob.stdout.split() == ["run.kruntimes.io/bobs-run"]
    own = kubectl(dev, "get", "runs")
    assert own.returncode == 1 and 'User "dev" cannot list' in own.stderr

    nobody = kubectl(dev, "get", "runs", "--as", "nobody")
    print("kubectl get runs --as nobody (dev, granted bob only) ->", shown(nobody))
    assert 'users "nobody" is forbidden: User "dev" cannot impersonate' in nobody.stderr


def test_auth_can_i_as_someone_answers_for_them(cluster):
    session, base, admin, dev = cluster
    mine = kubectl(admin, "auth", "can-i", "create", "runs")
    print("kubectl auth can-i create runs (admin) ->", shown(mine))
    assert (mine.returncode, mine.stdout.strip()) == (0, "yes")

    as_dev = kubectl(admin, "auth", "can-i", "create", "runs", "--as", "dev")
    print("kubectl auth can-i create runs --as dev (admin) ->", shown(as_dev))
    assert as_dev.returncode == 1 and as_dev.stdout.startswith("no")  # "no - <reason>"
    own = kubectl(dev, "auth", "can-i", "create", "runs")
    assert own.stdout == as_dev.stdout  # dev's own token says the same

    as_bob = kubectl(admin, "auth", "can-i", "create", "runs", "--as", "bob")
    print("kubectl auth can-i create runs --as bob (admin) ->", shown(as_bob))
    assert (as_bob.returncode, as_bob.stdout.strip()) == (0, "yes")
    elsewhere = kubectl(admin, "auth", "can-i", "create", "runs", "--as", "bob", "-n", "other")
    assert elsewhere.returncode == 1 and elsewhere.stdout.startswith("no")

    refused = kubectl(dev, "auth", "can-i", "create", "runs", "--as", "bob")
    print("kubectl auth can-i create runs --as bob (dev, no grant) ->", shown(refused))
    assert refused.returncode != 0
    assert 'users "bob" is forbidden: User "dev" cannot impersonate' in refused.stderr
