"""A Run's data and control for real under ``manage.py up``: outputs and a directory artifact
passed to a second Run, the log over HTTP, cancel killing a running step, and deletion
removing the artifacts before the Run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.helpers.live import API, RUNTIME, phase, ready_pods, running_with, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
BUILD = """
echo "building"
mkdir -p "$KRUNTIME_ARTIFACTS_DIR/dist"
printf 'payload-%s' "$KRUNTIME_RUN_UID" > "$KRUNTIME_ARTIFACTS_DIR/dist/app.txt"
echo "tests=passed" >> "$KRUNTIME_OUTPUTS"
"""


def _status(session, base, name) -> dict:
    return session.get(f"{base}{API}/runs/{name}", timeout=5).json().get("status", {})


def test_outputs_artifacts_logs_cancel_and_cleanup(portal_up, tmp_path):
    session, base = portal_up
    runtime = {**RUNTIME, "spec": {**RUNTIME["spec"], "artifactStore": STORE}}
    assert session.post(f"{base}{API}/runtimes", json=runtime, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=60), "Runtime Pods never got ready"

    session.post(f"{base}{API}/runs", json=script_run("build", BUILD), timeout=10)
    assert wait_until(lambda: phase(session, base, "build") == "Succeeded", timeout=30)
    build = _status(session, base, "build")
    assert build["outputs"] == {"tests": "passed"}
    (dist,) = build["artifactRefs"]
    assert (dist["name"], dist["type"], dist["driver"]) == ("dist", "directory", "filesystem")
    assert build["artifactStore"] == STORE

    uid = session.get(f"{base}{API}/runs/build", timeout=5).json()["metadata"]["uid"]
    verify = script_run("verify", f'test "$(cat dist/app.txt)" = "payload-{uid}"')
    verify["spec"]["artifactInputs"] = [{"ref": dist, "path": "dist"}]
    session.post(f"{base}{API}/runs", json=verify, timeout=10)
    assert wait_until(lambda: phase(session, base, "verify") in ("Succeeded", "Failed"), timeout=30)
    assert _status(session, base, "verify")["phase"] == "Succeeded", _status(
        session, base, "verify"
    )

    assert wait_until(
        lambda: "building" in session.get(f"{base}{API}/runs/build/log", timeout=5).text, timeout=10
    )

    marker = f"300.{os.getpid()}{time.monotonic_ns() % 10**6}"
    session.post(f"{base}{API}/runs", json=script_run("sleeper", f"sleep {marker}"), timeout=10)
    assert wait_until(lambda: running_with(f"sleep\0{marker}"), timeout=30)
    patched = session.patch(
        f"{base}{API}/runs/sleeper",
        json={"spec": {"cancelRequested": True}},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=5,
    )
    assert patched.status_code == 200, patched.text
    asked = time.monotonic()
    assert wait_until(lambda: phase(session, base, "sleeper") == "Cancelled", timeout=30)
    print(f"cancel -> Cancelled in {time.monotonic() - asked:.2f}s")
    assert not running_with(f"sleep\0{marker}")

    # portal_up's data dir: where its local pods keep the artifact volumes
    stored = (
        tmp_path
        / "data"
        / "artifact-volumes"
        / "artifacts"
        / Path(dist["location"]["filesystem"]["path"])
    )
    assert stored.is_file()
    assert session.delete(f"{base}{API}/runs/build", timeout=5).status_code in (200, 202)
    assert wait_until(
        lambda: session.get(f"{base}{API}/runs/build", timeout=5).status_code == 404, timeout=30
    ), "the finalizer never let go"
    assert not stored.exists()
