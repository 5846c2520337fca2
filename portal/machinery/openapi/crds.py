"""apiextensions.k8s.io/v1 CustomResourceDefinitions for the kinds this portal defines, with
the same structural schema the documents publish (``schema_for_kind``)."""

from __future__ import annotations

from typing import Any

from ..registry import ResourceKind, registry
from .kinds import schema_for_kind

# Kubernetes' own groups that do not end in .k8s.io (apps/v1 ControllerRevision is served here)
BUILTIN_GROUPS = frozenset({"apps", "batch", "autoscaling", "policy"})


def is_builtin_group(group: str) -> bool:
    """Kubernetes' own groups (core, ``*.k8s.io``, apps...): a cluster already serves those."""
    return not group or group in BUILTIN_GROUPS or group == "k8s.io" or group.endswith(".k8s.io")


def crd_name(kind: ResourceKind) -> str:
    return f"{kind.plural}.{kind.group}"


def _version(kind: ResourceKind, storage: bool) -> dict[str, Any]:
    schema = schema_for_kind(kind)
    schema["properties"]["metadata"] = {"type": "object"}  # a CRD may say no more of it
    version: dict[str, Any] = {
        "name": kind.version,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema},
    }
    if kind.status_field:
        version["subresources"] = {"status": {}}
    return version


def custom_resource_definition(versions: list[ResourceKind]) -> dict[str, Any]:
    """One CRD for one group and plural; the first version registered is the stored one."""
    first = versions[0]
    names: dict[str, Any] = {
        "kind": first.kind,
        "listKind": f"{first.kind}List",
        "plural": first.plural,
        "singular": first.singular,
    }
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(first)},
        "spec": {
            "group": first.group,
            "names": names,
            "scope": "Namespaced" if first.namespaced else "Cluster",
            "versions": [_version(k, storage=i == 0) for i, k in enumerate(versions)],
        },
    }


def custom_resource_definitions() -> list[dict[str, Any]]:
    by_name: dict[str, list[ResourceKind]] = {}
    for kind in registry.kinds:
        if not is_builtin_group(kind.group):
            by_name.setdefault(crd_name(kind), []).append(kind)
    return [custom_resource_definition(kinds) for _, kinds in sorted(by_name.items())]
