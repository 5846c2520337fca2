"""Runtimes beyond bash under ``manage.py up`` (one start): the examples' python Runtime (the
built-in Python Runtime Server) and the custom Runtime (examples/custom-runtime/: a third-party
server runtimed starts from the runtime container's command) each run their example Run to
Succeeded, with the args, the outputs environment and the log as a bash Run has them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers.live import API, phase
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(path: str) -> dict:
    manifest = yaml.safe_load((EXAMPLES / path).read_text())
    manifest["metadata"]["namespace"] = "default"
    manifest["spec"].pop("artifactStore", None)
    return manifest


@pytest.mark.parametrize("broker", ["filesystem"], indirect=True)
def test_a_python_run_and_a_custom_runtime_run_succeed(portal_up):
    session, base = portal_up
    for runtime in ("25-runtime-python.yaml", "custom-runtime/runtime.yaml"):
        created = session.post(f"{base}{API}/runtimes", json=example(runtime), timeout=10)
        assert created.status_code == 201, created.text
    for run in ("35-run-python.yaml", "custom-runtime/run.yaml"):
        created = session.post(f"{base}{API}/runs", json=example(run), timeout=10)
        assert created.status_code == 201, created.text

    ended = ("Succeeded", "Failed", "Timeout", "Cancelled")
    for name in ("hello-python", "hello-custom"):
        assert wait_until(lambda n=name: phase(session, base, n) in ended, timeout=90), name
    python = session.get(f"{base}{API}/runs/hello-python", timeout=5).json()["status"]
    custom = session.get(f"{base}{API}/runs/hello-custom", timeout=5).json()["status"]
    assert python["phase"] == "Succeeded", python
    assert python["outputs"] == {"greeting": "hello world"}
    assert custom["phase"] == "Succeeded", custom
    assert custom["outputs"] == {"served": "sh-example"}  # set by the custom server only

    def logged(name: str, text: str) -> bool:
        return text in session.get(f"{base}{API}/runs/{name}/log", timeout=5).text

    assert wait_until(lambda: logged("hello-python", "hello from Python 3."), timeout=10)
    assert wait_until(lambda: logged("hello-custom", "custom Runtime Server, args: one two"), 10)
