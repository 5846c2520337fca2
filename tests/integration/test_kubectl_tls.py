"""kubectl and the official Python client against ``manage.py up --tls`` with a kubeconfig as
``manage.py kubeconfig`` writes it: the server is verified against the data dir's CA and the
token goes with every request (kubectl sends tokens only over TLS)."""

from __future__ import annotations

import json
import time

import pytest
import requests
from kubernetes import client, config, dynamic

from portal import tls
from tests.helpers.kubectl import kubectl, write_kubeconfig
from tests.helpers.live import API, script_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def up_env() -> dict[str, str]:
    # one web process, one follow per user: the slot a gone client frees is observable
    return {"KRUNTIMES_WEB_WORKERS": "1", "KRUNTIMES_MAX_STREAMS_PER_USER": "1"}


@pytest.fixture
def live(portal_up_tls, admin_user, tmp_path):
    session, base, up = portal_up_tls
    ca = up.data_dir / "tls/ca.crt"
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server=base, ca_file=ca, user=admin_user)
    return session, base, kubeconfig


def test_kubectl_reads_the_portal_over_tls(live):
    session, base, kubeconfig = live
    version = kubectl(kubeconfig, "version", "-o", "json")
    assert version.returncode == 0, version.stderr
    server = json.loads(version.stdout)["serverVersion"]
    assert server["major"] == "1" and "kruntimes" in server["gitVersion"]
    namespaces = kubectl(kubeconfig, "get", "namespaces")
    assert namespaces.returncode == 0, namespaces.stderr
    assert "default" in namespaces.stdout
    runs = kubectl(kubeconfig, "get", "runs", "-n", "default")
    assert runs.returncode == 0, runs.stderr
    assert "No resources found" in runs.stderr
    raw = kubectl(kubeconfig, "get", "--raw", "/version")
    assert raw.returncode == 0, raw.stderr
    assert json.loads(raw.stdout)["gitVersion"] == server["gitVersion"]
    missing = kubectl(kubeconfig, "get", "--raw", "/version/x")
    assert missing.returncode != 0 and "NotFound" in missing.stderr + missing.stdout
    # plain HTTP to the HTTPS port is told so (as kube-apiserver tells it), and HTTPS on the
    # same port goes on working
    plain = requests.get(base.replace("https://", "http://") + "/version", timeout=10)
    assert plain.status_code == 400
    assert plain.json()["message"] == "Client sent an HTTP request to an HTTPS server."
    assert plain.json()["kind"] == "Status"
    assert session.get(f"{base}/version", timeout=10).status_code == 200


def test_kubectl_refuses_a_server_its_ca_did_not_sign(live, admin_user, tmp_path):
    session, base, _ = live
    other = tls.Paths(tmp_path / "other-ca")
    tls.ensure_ca(other)
    kubeconfig = write_kubeconfig(
        tmp_path / "other", server=base, ca_file=other.ca_cert, user=admin_user
    )
    result = kubectl(kubeconfig, "get", "namespaces")
    assert result.returncode != 0
    assert "certificate" in result.stderr


def test_the_python_client_lists_over_tls_with_verification_on(live):
    session, base, kubeconfig = live
    api = config.new_client_from_config(config_file=str(kubeconfig))
    assert api.configuration.verify_ssl
    assert "kruntimes" in client.VersionApi(api).get_code().git_version
    names = [ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items]
    assert "default" in names
    runs = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "kruntimes.io", "v1alpha1", "default", "runs"
    )
    assert runs["items"] == []
    resources = dynamic.DynamicClient(api).resources
    run_kind = resources.get(api_version="kruntimes.io/v1alpha1", kind="Run")
    assert run_kind.get(namespace="default").items == []


def test_a_log_follow_frees_its_slot_when_the_client_goes_away(live):
    session, base, _ = live
    run = script_run("waits", "true")
    run["spec"]["runtime"] = "nowhere"  # stays Pending: its log never ends
    created = session.post(f"{base}{API}/runs", json=run, timeout=10)
    assert created.status_code == 201, created.text
    url = f"{base}{API}/runs/waits/log?follow=true"
    first = session.get(url, stream=True, timeout=10)  # Pending: the follow waits for output
    assert first.status_code == 200
    assert session.get(url, timeout=10).status_code == 429  # the user's one slot is taken
    assert session.get(f"{base}{API}/runs", timeout=10).status_code == 200  # others answer
    first.close()  # the client goes away
    deadline = time.monotonic() + 10
    while True:
        again = requests.get(url, headers=session.headers, verify=session.verify, stream=True)
        if again.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    again.close()
    assert again.status_code == 200, "the gone follower's slot was never given back"
