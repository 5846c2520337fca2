"""Workflow, WorkflowRun and Action tests: manifest builders, URLs, and writes through the store."""

from __future__ import annotations

import copy

from portal.machinery import store
from portal.machinery.registry import registry
from tests.helpers.operator import OPERATOR

API_VERSION = "kruntimes.io/v1alpha1"


def url(plural: str, namespace: str = "default", name: str = "") -> str:
    base = f"/apis/{API_VERSION}/namespaces/{namespace}/{plural}"
    return f"{base}/{name}" if name else base


def run_url(workflow: str, namespace: str = "default") -> str:
    return f"{url('workflows', namespace, workflow)}/run"


def step(name: str = "s", run: str = "echo ok", **fields) -> dict:
    return {"name": name, "run": run, **fields} if run else {"name": name, **fields}


def job(*steps: dict, **fields) -> dict:
    """A steps job on the ``bash`` Runtime (``steps`` default: one ``echo ok`` step)."""
    return {"runs-on": "bash", "steps": list(steps) or [step()], **fields}


def build_deploy_jobs() -> dict:
    """build (test, package) and deploy needing it: outputs and an artifact cross over."""
    return {
        "build": job(
            step("test", 'echo "tests=passed" >> "$KRUNTIME_OUTPUTS"'),
            step("package", 'tar -czf "$KRUNTIME_ARTIFACTS_DIR/dist.tgz" src'),
            outputs={"tests": "${{ steps.test.outputs.tests }}"},
        ),
        "deploy": job(
            step(
                "verify",
                "tar -tzf dist.tgz && echo ${{ jobs.build.outputs.tests }}",
                artifacts=[{"from": "jobs.build.artifacts.dist.tgz", "path": "dist.tgz"}],
            ),
            needs=["build"],
        ),
    }


def workflow_manifest(name: str = "ci", jobs: dict | None = None, **spec) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "Workflow",
        "metadata": {"name": name},
        "spec": {"jobs": copy.deepcopy(jobs) if jobs is not None else {"build": job()}, **spec},
    }


def workflow_run_manifest(name: str = "wfr", jobs: dict | None = None, **spec) -> dict:
    """An inline WorkflowRun (its own jobs, no workflowRef)."""
    manifest = workflow_manifest(name, jobs, **spec)
    manifest["kind"] = "WorkflowRun"
    return manifest


def started_run_manifest(workflow: str = "ci", name: str = "wfr", **spec) -> dict:
    """A WorkflowRun naming a Workflow to freeze (no jobs)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkflowRun",
        "metadata": {"name": name},
        "spec": {"workflowRef": {"name": workflow}, **spec},
    }


def action_manifest(name: str = "greet", steps: list | None = None, **spec) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "Action",
        "metadata": {"name": name},
        "spec": {"steps": steps if steps is not None else [step()], **spec},
    }


def kind(name: str):
    return registry.for_manifest(API_VERSION, name)


def create(manifest: dict, namespace: str = "default", context=OPERATOR):
    found = registry.for_manifest(manifest["apiVersion"], manifest["kind"])
    return store.create(found, manifest, namespace=namespace, context=context)


def causes_of(response) -> dict[str, str]:
    """field -> message of a 422's causes."""
    assert response.status_code == 422, response.json()
    return {c["field"]: c["message"] for c in response.json()["details"]["causes"]}
