"""Function mode under ``manage.py up --tls``, as a caller and an operator meet it: a function
Run goes Ready with an HTTPS endpoint, curl invokes it (with a token allowed to, without one,
with one that is not allowed), it survives its pod being killed by registering again on a
new attempt, invocations leave no trace on the Run, an idle one ends IdleTimeout and gives its
slot back, and a deleted one is gone with its finalizer.

One server for the walk (starting one costs seconds)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from tests.helpers.waiting import wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"
SOURCE = "import os\n\ndef invoke(request):\n    return {'sum': sum(request['numbers']), 'attempt': os.environ['KRUNTIME_ATTEMPT']}\n"


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "1"}


def function(name: str, **mode) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "metadata": {"name": name},
        "spec": {
            "runtime": "python",
            "source": {"inline": SOURCE, "inlinePath": "app.py"},
            "mode": {"function": {"handler": "app.invoke", **mode}},
            "retryPolicy": {"maxAttempts": 3},
        },
    }


def curl(url: str, ca: str, token: str | None, body: str) -> tuple[int, dict]:
    argv = ["curl", "-sS", "--cacert", ca, "-o", "-", "-w", "\n%{http_code}",
            "-H", "Content-Type: application/json", "-d", body, url]  # fmt: skip
    if token:
        argv[1:1] = ["-H", f"Authorization: Bearer {token}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    print("$ curl", url, "->", done.stdout.strip().replace("\n", " "), done.stderr)
    text, _, code = done.stdout.rpartition("\n")
    return int(code), json.loads(text)


def test_a_function_run_end_to_end(portal_up_tls, django_user_model):
    from scheduling.models import Run, RuntimePod

    session, base, up = portal_up_tls
    ca = str(up.data_dir / "tls/ca.crt")
    runtime = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "python"},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "runtime", "image": "runtime-python"}]}},
            "capacity": {"resources": {"runs": 1}},
        },
    }
    assert session.post(f"{base}/apis/kruntimes.io/v1alpha1/namespaces/default/runtimes",
                        json=runtime).status_code == 201  # fmt: skip
    assert wait_until(
        lambda: RuntimePod.objects.filter(runtime="python", ready=True).count() == 2, timeout=60
    )

    # Ready, with an HTTPS endpoint whose CA is the portal's
    assert session.post(f"{base}{RUNS}", json=function("adder")).status_code == 201
    assert wait_until(lambda: Run.objects.get(name="adder").phase == "Ready", timeout=30)
    ready = session.get(f"{base}{RUNS}/adder").json()
    endpoint = ready["status"]["endpoint"]
    assert (
        endpoint["url"]
        == f"{base}/v1/namespaces/default/runs/adder/{ready['metadata']['uid']}/invoke"
    )
    assert endpoint["caBundle"] == Path(ca).read_text()
    assert "kruntimes.io/function-cleanup" in ready["metadata"]["finalizers"]

    # curl: allowed, no token, a user without runs/invoke
    admin_token = session.headers["Authorization"].split()[1]
    code, answer = curl(endpoint["url"], ca, admin_token, '{"numbers": [1, 2, 3]}')
    assert (code, answer) == (200, {"sum": 6, "attempt": "1"})
    code, status = curl(endpoint["url"], ca, None, "{}")
    assert (code, status["reason"]) == (401, "Unauthorized")
    mallory = django_user_model.objects.create_user("mallory")
    mallory_token = Token.objects.create(user=mallory).key
    code, status = curl(endpoint["url"], ca, mallory_token, "{}")
    assert (code, status["reason"]) == (403, "Forbidden")
    assert "runs/invoke" in status["message"] or "invoke" in status["message"]

    # invocations leave nothing on the Run
    version = Run.objects.get(name="adder").resource_version
    for n in range(50):
        assert curl(endpoint["url"], ca, admin_token, f'{{"numbers": [{n}]}}')[0] == 200
    assert Run.objects.get(name="adder").resource_version == version

    # its pod killed: the Run registers again on attempt 2 and answers at the same URL
    run = Run.objects.get(name="adder")
    pod = RuntimePod.objects.get(name=run.assigned_pod)
    os.kill(pod.pid, signal.SIGKILL)
    assert wait_until(
        lambda: (lambda r: r.phase == "Ready" and r.attempt == 2)(Run.objects.get(name="adder")),
        timeout=90,
    ), Run.objects.get(name="adder").status
    code, answer = curl(endpoint["url"], ca, admin_token, '{"numbers": [4]}')
    assert (code, answer) == (200, {"sum": 4, "attempt": "2"})

    # an idle function ends IdleTimeout and gives its slot back (capacity 1 per pod: a second
    # function fits only once it is gone from its pod's active Runs)
    assert (
        session.post(f"{base}{RUNS}", json=function("idler", idleTimeoutSeconds=2)).status_code
        == 201
    )
    assert wait_until(lambda: Run.objects.get(name="idler").phase == "Ready", timeout=30)
    idler_pod = Run.objects.get(name="idler").assigned_pod
    assert wait_until(lambda: Run.objects.get(name="idler").phase == "Timeout", timeout=30)
    idled = Run.objects.get(name="idler").status
    assert idled["reason"] == "IdleTimeout" and "endpoint" not in idled
    assert wait_until(lambda: not RuntimePod.objects.get(name=idler_pod).active_runs, timeout=20)

    # deleted: unregistered, the finalizer released, the row gone, the endpoint 404
    assert session.delete(f"{base}{RUNS}/adder").status_code in (200, 202)
    assert wait_until(lambda: not Run.objects.filter(name="adder").exists(), timeout=30)
    code, status = curl(endpoint["url"], ca, admin_token, '{"numbers": [1]}')
    assert code == 404, status
