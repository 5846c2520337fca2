"""Issue 13's done-when, on ``manage.py up``: ``manage.py apply -f`` of LocalExecutionParameters,
a default JobClass on them and a two-step Job (examples/60-execution-local.yaml) ends with the
Job Succeeded (both steps' exit codes, effective resources in status) and the class Accepted
and Ready; the Job's log is served by the API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
GROUP = "/apis/execution.ayatori.ddupan.top/v1alpha1"


@pytest.fixture
def broker(tmp_path) -> dict[str, str]:
    data = tmp_path / "data"
    data.mkdir()
    return {"CELERY_BROKER_URL": "filesystem://localhost/", "KRUNTIMES_DATA_DIR": str(data)}


def test_the_example_job_succeeds_through_the_default_local_class(portal_up, broker):
    session, base = portal_up
    env = {  # what manage.py up runs with: the same database and broker
        **os.environ,
        **broker,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "KRUNTIMES_TEST_EAGER": "0",
        "KRUNTIMES_TEST_DB_NAME": connection.settings_dict["NAME"],
        "PYTHONPATH": str(ROOT),
    }
    for example in ("00-namespace.yaml", "60-execution-local.yaml"):
        subprocess.run(
            [sys.executable, "manage.py", "apply", "-f", f"examples/{example}"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )

    def job() -> dict:
        return session.get(f"{base}{GROUP}/namespaces/ci/jobs/build-and-test", timeout=5).json()

    wait_until(lambda: job().get("status", {}).get("phase") in ("Succeeded", "Failed"), 60)
    status = job()["status"]
    assert status["phase"] == "Succeeded", status
    assert [(s["name"], s["exitCode"]) for s in status["steps"]] == [("build", 0), ("test", 0)]
    assert status["effectiveResources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }
    assert status["resolvedJobClass"]["name"] == "default"
    job_class = session.get(f"{base}{GROUP}/jobclasses/default", timeout=5).json()
    conditions = {c["type"]: (c["status"], c["reason"]) for c in job_class["status"]["conditions"]}
    assert conditions == {"Accepted": ("True", "Accepted"), "Ready": ("True", "BackendReachable")}
    log = session.get(f"{base}{GROUP}/namespaces/ci/jobs/build-and-test/log", timeout=5).text
    assert "tests: passed" in log
    listing = subprocess.run(
        [sys.executable, "manage.py", "get", "jobs", "-n", "ci"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "build-and-test" in listing and "Succeeded" in listing
