"""manage.py export-crds: one apiextensions.k8s.io/v1 CRD per kind the portal defines, each
with a structural schema (what kube-apiserver demands of a CRD)."""

from __future__ import annotations

import io

import yaml
from django.core.management import call_command

from portal.machinery.openapi.kinds import schema_for_kind
from portal.machinery.registry import registry


def exported() -> list[dict]:
    out = io.StringIO()
    call_command("export-crds", stdout=out)
    return list(yaml.safe_load_all(out.getvalue()))


def structural_problems(schema: dict, path: str = "") -> list[str]:
    """What apiextensions refuses: a $ref, an untyped node (unless it keeps unknown fields or
    is int-or-string), additionalProperties false or beside properties."""
    problems = []
    free = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
        "x-kubernetes-int-or-string"
    )
    if "$ref" in schema:
        problems.append(f"{path}: $ref")
    if "type" not in schema and not free:
        problems.append(f"{path}: no type")
    extra = schema.get("additionalProperties")
    if extra is False or (extra is not None and "properties" in schema):
        problems.append(f"{path}: additionalProperties {extra!r}")
    for name, child in schema.get("properties", {}).items():
        problems += structural_problems(child, f"{path}.{name}")
    if "items" in schema:
        problems += structural_problems(schema["items"], f"{path}[]")
    if isinstance(extra, dict):
        problems += structural_problems(extra, f"{path}{{}}")
    return problems


def test_every_portal_kind_and_no_builtin_one_has_a_crd():
    names = {crd["metadata"]["name"] for crd in exported()}
    assert {
        "runs.kruntimes.io",
        "runtimes.kruntimes.io",
        "jobs.execution.ayatori.ddupan.top",
    } <= names
    assert not any(name.endswith((".k8s.io", ".")) for name in names)
    assert "controllerrevisions.apps" not in names  # apps/v1 is Kubernetes' own
    defined = {
        f"{k.plural}.{k.group}"
        for k in registry.kinds
        if k.group.endswith(("kruntimes.io", "ayatori.ddupan.top"))
    }
    assert defined == names


def test_a_crd_names_the_kind_and_serves_its_status():
    run = next(c for c in exported() if c["metadata"]["name"] == "runs.kruntimes.io")
    assert run["apiVersion"] == "apiextensions.k8s.io/v1"
    assert run["spec"]["names"] == {
        "kind": "Run",
        "listKind": "RunList",
        "plural": "runs",
        "singular": "run",
        "shortNames": ["rn"],
        "categories": ["all", "kruntimes"],  # kubectl get all / get kruntimes on a cluster
    }
    assert run["spec"]["scope"] == "Namespaced"
    (version,) = run["spec"]["versions"]
    assert version["storage"] and version["served"] and version["subresources"] == {"status": {}}
    schema = version["schema"]["openAPIV3Schema"]
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert (
        schema["properties"]["spec"]
        == schema_for_kind(registry.lookup("runs"))["properties"]["spec"]
    )


def test_every_crd_schema_is_structural():
    for crd in exported():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert structural_problems(schema) == [], crd["metadata"]["name"]
