"""The kruntimes documentation's own manifests, applied with the real kubectl to
``manage.py up --tls``: each is admitted or refused as kruntimes' CRDs would, and reaches the
phase its documentation says.

The manifests are in ``manifests/upstream/``, verbatim from kruntimes at commit cad3923 below a
one-line comment naming the document and section (README, docs/quickstart.md, docs/usage.md,
docs/demos.md, docs/api.md, docs/design/workflow-reuse.md, docs/design/workflow-data-sharing.md).
What this test changes, and why:

- Most of the docs' Runs have no ``spec.mode``, which kruntimes' own Run CRD requires
  (``required: [mode, runtime]`` in charts/kruntimes/crds/kruntimes.io_runs.yaml). Verbatim they
  are refused here as there, with ``spec.mode`` required; they are then applied with
  ``mode: {task: {}}`` added, the least the CRD accepts, and must reach the documented phase.
- The README's Run (``spec.args``) and usage.md's ``env-example`` (``env`` as a map) do not
  match the CRD either (RunSpec has no ``args``; ``env`` is a list): refused, not run.
- demos.md's burst loop is a shell heredoc: ``$i`` is rendered as the shell would (1..12).
- An ArtifactStore is added to usage.md's Runtime ``bash`` by a patch (the one of
  examples/20-runtime-bash.yaml): the docs' Runtime has none, and their artifacts need one.
- docs/design/workflow-data-sharing.md's ``ci-build-package`` tars ``src`` from its workspace;
  a Run of this test puts ``src`` there first. Its Workflow spells the artifact path
  ``./dist.tgz``, which this portal refuses (seed 002 spells it ``dist.tgz``): asserted, then
  applied with ``dist.tgz``; a WorkflowRun of this test calls it (the docs trigger it with krt).

Not run here: usage.md's two ``repoURL`` Runs (a placeholder GitHub repository, and no network
in a test; they are admitted by a server-side dry run), demos.md's ``demo-python`` (no python
Runtime: runtimed executes bash), usage.md's ``release-demo`` (``make package`` with no
Makefile, the same case as ``ci-demo``, and the same name as workflow-reuse.md's).
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.kubectl import apply, get_object, kubectl, ok, wait_phase

pytestmark = pytest.mark.django_db(transaction=True)
UPSTREAM = Path(__file__).parent / "manifests/upstream"
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"
ARTIFACT_STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}
MODE_REQUIRED = "spec.mode: This field is required"


@pytest.fixture
def up_env() -> dict[str, str]:
    return {"KRUNTIMES_WEB_WORKERS": "2"}


@pytest.fixture
def kubeconfig(admin_kubeconfig) -> Path:
    return admin_kubeconfig


def upstream(name: str) -> dict:
    return yaml.safe_load((UPSTREAM / name).read_text())


def apply_file(config: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    return kubectl(config, "apply", "-f", str(UPSTREAM / name), *extra)


def with_task_mode(run: dict) -> dict:
    """The least kruntimes' Run CRD accepts from a doc's Run without spec.mode."""
    run = copy.deepcopy(run)
    run["spec"]["mode"] = {"task": {}}
    return run


def status(config: Path, kind: str, name: str) -> dict:
    return get_object(config, kind, name)["status"]


def log(config: Path, name: str) -> str:
    return ok(kubectl(config, "get", "--raw", f"{RUNS}/{name}/log"))


def burst(i: int) -> dict:
    """The heredoc of demos.md's loop, as bash renders it for ``i``."""
    text = (UPSTREAM / "demos-run-burst-template.yaml").read_text()
    return yaml.safe_load(text.replace("$i", str(i)).replace("\\$", "$"))


# Runs the docs show without spec.mode, and what the refusal names besides spec.mode
WITHOUT_MODE = {
    "quickstart-run-hello.yaml": [],
    "usage-run-hello.yaml": [],
    "usage-run-inline-example.yaml": [],
    "demos-run-demo-bash.yaml": [],
    "demos-run-demo-python.yaml": [],
    "demos-run-custom-runtime-demo.yaml": [],
    "data-sharing-run-ci-build-package.yaml": [],
    "readme-run-hello.yaml": ['spec.args: unknown field "args"'],
    "usage-run-env-example.yaml": ['spec.env: Expected a list of items but got type "dict"'],
}


def test_the_documentation_examples_reach_their_documented_phases(kubeconfig):
    k = kubeconfig
    # --- what kruntimes' CRDs refuse is refused here, with the same field -------------------
    for name, others in WITHOUT_MODE.items():
        refused = apply_file(k, name)
        assert refused.returncode != 0 and MODE_REQUIRED in refused.stderr, (name, refused)
        for cause in others:
            assert cause in refused.stderr, (name, refused.stderr)
    for name in ("usage-run-script-example.yaml", "usage-run-script-args-example.yaml"):
        assert "(server dry run)" in ok(apply_file(k, name, "--dry-run=server"))
    assert "(server dry run)" in ok(
        apply_file(k, "usage-workflowrun-release-demo.yaml", "--dry-run=server")
    )

    # --- Runtimes (usage.md, demos.md Demo 2's patch and Demo 3), verbatim -------------------
    assert ok(apply_file(k, "usage-runtime-bash.yaml")) == "runtime.kruntimes.io/bash created\n"
    demo2 = {"spec": {"replicas": 2, "capacity": {"resources": {"runs": "2"}}}}
    ok(kubectl(k, "patch", "runtime", "bash", "--type", "merge", "-p", json.dumps(demo2)))
    store = {"spec": {"artifactStore": ARTIFACT_STORE}}  # adapted: see the module docstring
    ok(kubectl(k, "patch", "runtime", "bash", "--type", "merge", "-p", json.dumps(store)))
    ok(apply_file(k, "demos-runtime-custom-bash.yaml"))

    # --- Runs ------------------------------------------------------------------------------
    ok(apply_file(k, "api-run-hello-task.yaml"))  # args, no source: verbatim
    apply(
        k,
        *(
            with_task_mode(upstream(name))
            for name in (
                "quickstart-run-hello.yaml",
                "usage-run-inline-example.yaml",
                "demos-run-demo-bash.yaml",
                "demos-run-custom-runtime-demo.yaml",
            )
        ),
        *(with_task_mode(burst(i)) for i in range(1, 13)),
    )
    ok(apply_file(k, "data-sharing-persistentworkspace.yaml"))
    checkout = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "metadata": {"name": "ci-build-checkout"},
        "spec": {
            "runtime": "bash",
            "workspace": {"name": "ci-build-workspace"},
            "mode": {"task": {"args": ["mkdir -p src && echo 'print(1)' > src/app.py"]}},
        },
    }
    apply(k, checkout)

    # --- WorkflowRuns: inline, with an Action, from a Workflow -------------------------------
    ok(apply_file(k, "usage-workflowrun-ci-demo.yaml"))
    ok(apply_file(k, "workflow-reuse-workflowrun-release-demo-inline.yaml"))
    ok(apply_file(k, "workflow-reuse-action-setup-python-tools.yaml"))
    ok(apply_file(k, "workflow-reuse-workflowrun-build-demo.yaml"))
    sharing = upstream("data-sharing-workflow-ci-data-sharing-demo.yaml")
    refused = kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump(sharing))
    assert "spec.jobs.deploy.steps[0].artifacts[0].path" in refused.stderr, refused
    sharing["spec"]["jobs"]["deploy"]["steps"][0]["artifacts"][0]["path"] = "dist.tgz"
    ok(apply_file(k, "workflow-reuse-workflow-build-and-test.yaml"))
    apply(
        k,
        sharing,
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "WorkflowRun",
            "metadata": {"name": "ci-data-sharing-demo"},
            "spec": {"jobs": {"ci": {"uses": "ci-data-sharing-demo"}}},
        },
    )

    # --- the phases the docs say ------------------------------------------------------------
    wait_phase(k, "run", "hello-task", "Succeeded")
    assert log(k, "hello-task") == "hello\n"
    wait_phase(k, "run", "hello", "Succeeded")
    assert log(k, "hello") == "hello from kruntimes\n"
    wait_phase(k, "run", "inline-example", "Succeeded")
    wait_phase(k, "run", "demo-bash", "Succeeded")
    assert status(k, "run", "demo-bash")["outputs"] == {"language": "bash"}
    assert log(k, "demo-bash") == "hello from bash\n"
    wait_phase(k, "run", "custom-runtime-demo", "Succeeded")  # jq is on this machine
    assert log(k, "custom-runtime-demo") == "custom-bash has jq\n"
    for i in range(1, 13):
        wait_phase(k, "run", f"burst-{i}", "Succeeded")
        assert status(k, "run", f"burst-{i}")["outputs"] == {"run": str(i)}
    pods = {status(k, "run", f"burst-{i}")["assignedPod"] for i in range(1, 13)}
    assert pods == {"bash-0", "bash-1"}

    wait_phase(k, "run", "ci-build-checkout", "Succeeded")
    apply(k, with_task_mode(upstream("data-sharing-run-ci-build-package.yaml")))
    wait_phase(k, "run", "ci-build-package", "Succeeded")
    refs = status(k, "run", "ci-build-package")["artifactRefs"]
    assert [(r["name"], r["driver"]) for r in refs] == [("dist.tgz", "filesystem")]

    # api.md: Failed if any job failed (make test, and no Makefile), else Succeeded
    wait_phase(k, "workflowrun", "ci-demo", "Failed")
    wait_phase(k, "workflowrun", "release-demo", "Succeeded")
    wait_phase(k, "workflowrun", "build-demo", "Succeeded")
    assert log(k, "build-demo-build-package") == "using 3.13\n"
    wait_phase(k, "workflowrun", "ci-data-sharing-demo", "Succeeded")
    assert "artifact verified" in log(k, "ci-data-sharing-demo-ci-deploy-verify-artifact")

    # workflow-reuse.md's call of build-and-test: its outputs read jobs.build.outputs.image,
    # which job build never declares; an expression without a value fails (API.md)
    ok(kubectl(k, "delete", "workflowrun", "release-demo"))
    ok(apply_file(k, "workflow-reuse-workflowrun-release-demo-uses.yaml"))
    wait_phase(k, "workflowrun", "release-demo", "Failed")
    message = status(k, "workflowrun", "release-demo")["message"]
    assert "${{ jobs.build.outputs.image }} has no value" in message
    print(ok(kubectl(k, "get", "runs,workflowruns,runtimes")))
