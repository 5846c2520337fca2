"""API tests of the scheduling kinds (Runtime, Run): manifests and request helpers."""

from __future__ import annotations

import copy
import json

API_VERSION = "kruntimes.io/v1alpha1"
DIGEST = "sha256:" + "a" * 64


def runtimes_url(namespace: str = "default") -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/runtimes"


def runs_url(namespace: str = "default") -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/runs"


def runtime_manifest(name: str = "bash", **spec) -> dict:
    base = {"template": {"spec": {"containers": [{"name": "runtime", "image": "bash:5.2"}]}}}
    return {
        "apiVersion": API_VERSION,
        "kind": "Runtime",
        "metadata": {"name": name},
        "spec": {**base, **spec},
    }


def run_manifest(name: str = "r", metadata: dict | None = None, **spec) -> dict:
    base = {"runtime": "bash", "source": {"inline": "echo ok"}, "mode": {"task": {}}}
    return {
        "apiVersion": API_VERSION,
        "kind": "Run",
        "metadata": {"name": name, **(metadata or {})},
        "spec": {**base, **spec},
    }


def artifact_ref(name: str = "report", driver: str = "filesystem", **extra) -> dict:
    location = (
        {"filesystem": {"path": f"namespaces/default/runs/u/{name}"}}
        if driver == "filesystem"
        else {"s3": {"bucket": "b", "key": f"k/namespaces/default/runs/u/{name}"}}
    )
    return {
        "name": name,
        "driver": driver,
        "type": "file",
        "location": location,
        "sizeBytes": 10,
        "digest": DIGEST,
        "contentType": "text/plain",
        "createdAt": "2025-01-02T03:04:05Z",
        **extra,
    }


def term(**labels) -> dict:
    return {
        "labelSelector": {"matchLabels": labels or {"app": "a"}},
        "topologyKey": "kruntimes.io/runtime-pod",
    }


def weighted(weight: int = 1) -> dict:
    return {"weight": weight, "runAffinityTerm": term()}


def merge_patch(client, url: str, body: dict):
    return client.patch(url, json.dumps(body), content_type="application/merge-patch+json")


def causes(response) -> dict[str, str]:
    """field -> reason of a Status response's causes."""
    assert response.status_code == 422, response.json()
    return {c["field"]: c["reason"] for c in response.json()["details"]["causes"]}


def with_spec(manifest: dict, **spec) -> dict:
    manifest = copy.deepcopy(manifest)
    manifest["spec"].update(spec)
    return manifest


# metav1 CauseTypes, short, for the validation tables
REQ, INV, NSUP = "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported"
LONG, MANY, FORB = "FieldValueTooLong", "FieldValueTooMany", "FieldValueForbidden"
TYPE, DUP = "FieldValueTypeInvalid", "FieldValueDuplicate"
