"""A registered kind's whole-object schema, and the names Kubernetes gives its definitions."""

from __future__ import annotations

import copy
from typing import Any

from ..registry import ResourceKind
from ..serializers import fresh_field
from .fields import Schema, field_schema

API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values."
)
KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. In "
    "CamelCase. Cannot be updated."
)
METADATA_DOC = "Standard object's metadata: name, namespace, labels, annotations, finalizers."
META_PREFIX = "io.k8s.apimachinery.pkg.apis.meta.v1"
OBJECT_META = f"{META_PREFIX}.ObjectMeta"
LIST_META = f"{META_PREFIX}.ListMeta"


def definition_prefix(group: str, version: str) -> str:
    """Kubernetes' names: ``io.k8s.api.core.v1`` for the core group, ``io.k8s.api.rbac.v1``
    for ``*.k8s.io`` groups, the reversed group for the rest (as for CRDs:
    ``io.kruntimes.v1alpha1``)."""
    if not group:
        return f"io.k8s.api.core.{version}"
    if group.endswith(".k8s.io"):
        return f"io.k8s.api.{group.split('.')[0]}.{version}"
    return ".".join([*reversed(group.split(".")), version])


def definition_name(kind: ResourceKind, suffix: str = "") -> str:
    return f"{definition_prefix(kind.group, kind.version)}.{kind.kind}{suffix}"


def gvk(kind: ResourceKind, suffix: str = "") -> dict[str, str]:
    return {"group": kind.group, "version": kind.version, "kind": f"{kind.kind}{suffix}"}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def described_ref(name: str, description: str) -> Schema:
    """A reference with its own description (OpenAPI 3.0 ignores siblings of a bare $ref)."""
    return {"allOf": [ref(name)], "description": description}


def kind_description(kind: ResourceKind) -> str:
    if kind.description:
        return kind.description
    doc = kind.model.__dict__.get("__doc__") or ""
    # Django writes "Run(id, name, ...)" into models that have no docstring of their own
    if not doc or doc.startswith(f"{kind.model.__name__}("):
        return f"{kind.kind} is a {kind.api_version} resource."
    return " ".join(doc.split())


def schema_for_kind(kind: ResourceKind, *, closed: bool = False) -> Schema:
    """The whole object as a structural schema (a CRD's ``openAPIV3Schema``): ``metadata`` is
    a plain object there, as CRDs require; the documents put ObjectMeta in its place."""
    properties: dict[str, Schema] = {
        "apiVersion": {"type": "string", "description": API_VERSION_DOC},
        "kind": {"type": "string", "description": KIND_DOC},
        "metadata": {"type": "object", "description": METADATA_DOC},
    }
    for wire, spec in kind.body.items():
        properties[wire] = field_schema(fresh_field(spec), closed=closed)
        properties[wire].pop("default", None)  # the object field itself is never defaulted
    schema: Schema = {
        "type": "object",
        "description": kind_description(kind),
        "properties": properties,
    }
    if closed:
        schema["additionalProperties"] = False
    return schema


def kind_definition(kind: ResourceKind) -> Schema:
    """The kind in an OpenAPI document: ObjectMeta referenced, its GVK named."""
    schema = copy.deepcopy(schema_for_kind(kind))
    schema["properties"]["metadata"] = described_ref(OBJECT_META, METADATA_DOC)
    schema["x-kubernetes-group-version-kind"] = [gvk(kind)]
    return schema


def list_definition(kind: ResourceKind) -> Schema:
    items: Any = ref(definition_name(kind))
    return {
        "type": "object",
        "description": f"{kind.kind}List is a list of {kind.kind}.",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DOC},
            "kind": {"type": "string", "description": KIND_DOC},
            "metadata": described_ref(LIST_META, "Standard list metadata."),
            "items": {"type": "array", "items": items, "description": f"List of {kind.plural}."},
        },
        "x-kubernetes-group-version-kind": [gvk(kind, "List")],
    }
