"""Under ``manage.py up`` with the beat slowed to 5 minutes: a Run for a Runtime that does not
exist yet says so, and is placed as soon as the Runtime is created; a source that cannot be
fetched fails the Run PrepareSource once, in one line, with no retry and no traceback."""

from __future__ import annotations

import time

import pytest

from tests.helpers.live import API, RUNTIME, phase
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_RECONCILE_INTERVAL_SECONDS": "300"}  # nothing may wait for the beat


def _run(name: str, runtime: str, **spec) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "metadata": {"name": name},
        "spec": {"runtime": runtime, "mode": {"task": {}}, **spec},
    }


def _status(session, base, name) -> dict:
    return session.get(f"{base}{API}/runs/{name}", timeout=5).json().get("status", {})


def test_a_run_waits_for_its_runtime_and_a_bad_source_fails_once(portal_up):
    session, base = portal_up
    created = session.post(
        f"{base}{API}/runs",
        timeout=10,
        json=_run("early", "late", source={"inline": "echo placed"}),
    )
    assert created.status_code == 201, created.text
    not_found = 'Runtime "late" not found in namespace "default"'
    assert wait_until(
        lambda: _status(session, base, "early").get("message") == not_found, timeout=20
    ), _status(session, base, "early")

    runtime = {**RUNTIME, "metadata": {"name": "late"}, "spec": {**RUNTIME["spec"], "replicas": 1}}
    started = time.monotonic()
    assert session.post(f"{base}{API}/runtimes", json=runtime, timeout=10).status_code == 201
    assert wait_until(lambda: phase(session, base, "early") == "Succeeded", timeout=60)
    print(f"Runtime created -> waiting Run Succeeded in {time.monotonic() - started:.1f}s")

    bad = _run(
        "bad-source",
        "late",
        source={"repoURL": "file:///nonexistent/repo.git"},
        mode={"task": {"entrypoint": "run.sh"}},
        retryPolicy={"maxAttempts": 3},
    )
    assert session.post(f"{base}{API}/runs", json=bad, timeout=10).status_code == 201
    assert wait_until(lambda: phase(session, base, "bad-source") == "Failed", timeout=30)
    status = _status(session, base, "bad-source")
    assert (status["reason"], status["attempt"]) == ("PrepareSource", 1)
    assert status["message"].startswith("git clone failed")
    assert "\n" not in status["message"] and "Traceback" not in status["message"]
    log = session.get(f"{base}{API}/runs/bad-source/log", timeout=5)
    assert log.status_code == 200 and "Traceback" not in log.text
    time.sleep(2)  # no second attempt follows
    assert _status(session, base, "bad-source")["attempt"] == 1
