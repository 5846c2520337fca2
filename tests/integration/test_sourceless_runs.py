"""Runs without ``spec.source`` on ``manage.py up --tls``, applied with the real kubectl.

The seed's (000/001) example Run, verbatim from ``manifests/seed-000-run-ci-build-test.yaml``:
``mode: {task: {}}``, no source, no args, so the bash Runtime runs the file ``script`` its
PersistentWorkspace holds; an earlier build step (a Run with the labels the example's
runAffinity requires) put it there. A Run with neither a file nor args fails at once, one line,
and its retryPolicy does not bring a second attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.kubectl import apply, get_object, kubectl, ok, wait_phase
from tests.helpers.live import RUNTIME

pytestmark = pytest.mark.django_db(transaction=True)
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"
SEED = Path(__file__).parent / "manifests/seed-000-run-ci-build-test.yaml"
BUILD_LABELS = {
    "workflows.kruntimes.io/workflow": "ci-data-sharing-demo",
    "workflows.kruntimes.io/job": "build",
}


@pytest.fixture
def kubeconfig(admin_kubeconfig) -> Path:
    return admin_kubeconfig


def log(config: Path, name: str) -> str:
    return ok(kubectl(config, "get", "--raw", f"{RUNS}/{name}/log"))


def run(name: str, mode: dict, **spec) -> dict:
    return {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "metadata": {"name": name, **spec.pop("metadata", {})},
        "spec": {"runtime": "bash", "mode": mode, **spec},
    }


def test_the_seed_example_applies_verbatim_and_succeeds(kubeconfig):
    apply(
        kubeconfig,
        {**RUNTIME, "spec": {**RUNTIME["spec"], "replicas": 2}},
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "PersistentWorkspace",
            "metadata": {"name": "ci-build-workspace"},
            "spec": {"runtime": "bash"},
        },
    )
    # the previous build step: args only, no source; it leaves the script in the workspace
    apply(
        kubeconfig,
        run(
            "ci-build-checkout",
            {
                "task": {
                    "args": ["mkdir -p src", "printf 'echo built $(ls src | wc -l)\\n' > script"]
                }
            },
            metadata={"labels": BUILD_LABELS},
            workspace={"name": "ci-build-workspace"},
        ),
    )
    wait_phase(kubeconfig, "run", "ci-build-checkout", "Succeeded")

    applied = ok(kubectl(kubeconfig, "apply", "-f", str(SEED)))
    assert applied == "run.kruntimes.io/ci-build-test created\n"
    wait_phase(kubeconfig, "run", "ci-build-test", "Succeeded")
    seed = get_object(kubeconfig, "run", "ci-build-test")
    assert "source" not in seed["spec"] and seed["spec"]["mode"] == {"task": {}}
    checkout = get_object(kubeconfig, "run", "ci-build-checkout")
    assert seed["status"]["assignedPod"] == checkout["status"]["assignedPod"]
    assert log(kubeconfig, "ci-build-test") == "built 0\n"
    print(ok(kubectl(kubeconfig, "get", "runs", "-o", "wide")))


def test_a_run_with_neither_source_nor_args_fails_once_in_one_line(kubeconfig):
    apply(kubeconfig, {**RUNTIME, "spec": {**RUNTIME["spec"], "replicas": 1}})
    apply(
        kubeconfig,
        run("nothing", {"task": {}}, retryPolicy={"maxAttempts": 3, "backoff": "1s"}),
        run("one-arg", {"task": {"args": ["echo \"$0 ran 'one arg'\""]}}),
    )
    wait_phase(kubeconfig, "run", "nothing", "Failed")
    wait_phase(kubeconfig, "run", "one-arg", "Succeeded")
    status = get_object(kubeconfig, "run", "nothing")["status"]
    assert (status["reason"], status["message"], status["attempt"]) == (
        "PrepareSource",
        "no args or script provided",
        1,
    )
    print(json.dumps(status, indent=2))
    # no second attempt comes later either
    assert get_object(kubeconfig, "run", "nothing")["status"]["attempt"] == 1
    assert log(kubeconfig, "one-arg") == "bash ran 'one arg'\n"
