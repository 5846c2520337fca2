"""RuntimePods as a read-only API resource: what the providers' rows say, read through get
and list (labels, RBAC), never written through the API or the store."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from portal.machinery import store
from portal.machinery.registry import registry
from scheduling.models import Run, RuntimePod
from tests.helpers.api import assert_status
from tests.helpers.operator import OPERATOR
from tests.helpers.rbac import bind_role, make_role
from tests.helpers.records import make_pod, make_run
from tests.portal.machinery.test_tables import KUBECTL_ACCEPT

pytestmark = pytest.mark.django_db

PODS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runtimepods"


@pytest.fixture
def pod():
    pod = make_pod("bash-0", runs=2)
    RuntimePod.objects.filter(pk=pod.pk).update(labels={"zone": "a"}, host="h1", pid=42)
    run = make_run("r1")
    Run.objects.filter(pk=run.pk).update(
        phase="Running", assigned_pod="bash-0", assigned_pod_uid=str(pod.uid)
    )
    return RuntimePod.objects.get(pk=pod.pk)


def test_get_shows_the_row(admin_api, pod):
    response = admin_api.get(f"{PODS}/bash-0")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["apiVersion"], body["kind"]) == ("kruntimes.io/v1alpha1", "RuntimePod")
    assert body["metadata"]["uid"] == str(pod.uid)
    assert body["metadata"]["labels"] == {"zone": "a"}
    assert body["spec"] == {"runtime": "bash", "provider": "local", "host": "h1"}
    status = body["status"]
    assert (status["phase"], status["ready"], status["pid"]) == ("Running", True, 42)
    assert status["capacity"] == {"runs": 2} and status["used"] == {"runs": 1}
    assert status["lastHeartbeat"].endswith("Z")


def test_status_follows_the_row(admin_api, pod):
    RuntimePod.objects.filter(pk=pod.pk).update(ready=False, phase="Terminating")
    status = admin_api.get(f"{PODS}/bash-0").json()["status"]
    assert (status["phase"], status["ready"]) == ("Terminating", False)


def test_list_with_label_selector_and_all_namespaces(admin_api, pod):
    make_pod("bash-1")
    make_pod("other-0", namespace="ci")
    names = [i["metadata"]["name"] for i in admin_api.get(PODS).json()["items"]]
    assert names == ["bash-0", "bash-1"]
    selected = admin_api.get(PODS, {"labelSelector": "zone=a"}).json()["items"]
    assert [i["metadata"]["name"] for i in selected] == ["bash-0"]
    everywhere = admin_api.get("/apis/kruntimes.io/v1alpha1/runtimepods").json()["items"]
    assert len(everywhere) == 3


def test_table_columns(admin_api, pod):
    body = admin_api.get(PODS, HTTP_ACCEPT=KUBECTL_ACCEPT).json()
    names = [c["name"] for c in body["columnDefinitions"]]
    assert names == ["Name", "Runtime", "Phase", "Ready", "Runs", "Age"]
    assert body["rows"][0]["cells"][:5] == ["bash-0", "bash", "Running", "true", "1/2"]


def test_reads_are_rbac_checked(admin_api, user_api, pod):
    assert_status(user_api.get(PODS), 403, "Forbidden")
    make_role(
        admin_api,
        "pod-reader",
        [{"apiGroups": ["kruntimes.io"], "resources": ["runtimepods"], "verbs": ["get", "list"]}],
    )
    bind_role(admin_api, "alice-pods", "Role", "pod-reader")
    assert user_api.get(PODS).status_code == 200
    assert user_api.get(f"{PODS}/bash-0").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "", {"metadata": {"name": "x"}}),
        ("put", "/bash-0", {"metadata": {"name": "bash-0"}}),
        ("patch", "/bash-0", {"metadata": {"labels": {"b": "1"}}}),
        ("delete", "/bash-0", None),
    ],
)
def test_api_writes_are_refused_even_for_an_administrator(admin_api, pod, method, path, body):
    kwargs = {"content_type": "application/merge-patch+json"} if method == "patch" else {}
    payload = json.dumps(body) if body is not None else None
    response = getattr(admin_api, method)(
        f"{PODS}{path}", payload, **(kwargs or {"content_type": "application/json"})
    )
    body = assert_status(response, 405, "MethodNotAllowed")
    assert "read-only" in body["message"] and "providers" in body["message"]
    assert RuntimePod.objects.get(pk=pod.pk).labels == {"zone": "a"}


def test_store_writes_are_refused(pod):
    kind = registry.lookup("rp")
    with pytest.raises(store.errors.StatusError) as raised:
        store.delete(kind, "default", "bash-0", context=OPERATOR)
    assert raised.value.code == 405
    with pytest.raises(store.errors.StatusError):
        store.patch(kind, "default", "bash-0", {"spec": {}}, context=OPERATOR)
    assert RuntimePod.objects.filter(pk=pod.pk).exists()


def test_discovery_lists_get_and_list(admin_api):
    resources = admin_api.get("/apis/kruntimes.io/v1alpha1").json()["resources"]
    [found] = [r for r in resources if r["name"] == "runtimepods"]
    assert found["verbs"] == ["get", "list"] and found["shortNames"] == ["rp"]
    assert found["namespaced"] is True
    assert not [r for r in resources if r["name"].startswith("runtimepods/")]


@pytest.mark.parametrize("name", ["runtimepods", "rp"])
def test_manage_py_get_lists_pods(pod, name):
    out = io.StringIO()
    call_command("get", name, stdout=out)
    rows = [line.split() for line in out.getvalue().splitlines()]
    assert rows[0] == ["NAME", "RUNTIME", "PHASE", "READY", "RUNS", "AGE"]
    assert rows[1][:5] == ["bash-0", "bash", "Running", "true", "1/2"]


def test_garbage_collection_leaves_the_rows_to_their_providers(pod):
    from portal.machinery import gc

    # a RuntimePod has no deletionTimestamp or finalizers: the collector walks stored kinds only
    assert gc.foreground_owners() == []
    assert gc.collect_owner(pod.uid).deleted == 0
    assert RuntimePod.objects.filter(pk=pod.pk).exists()
