"""The OpenAPI v3 documents, one per group-version, and the index that names them by hash
(``k8s.io/kube-openapi`` handler3: the hash is the document's ETag, SHA-512 in upper hex)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings

from ..registry import ResourceKind, registry
from .fields import Schema
from .kinds import definition_name, kind_definition, list_definition
from .meta import meta_definitions
from .paths import kind_paths


@dataclass(frozen=True)
class Rendered:
    body: bytes
    etag: str  # unquoted


def group_version_path(group: str, version: str) -> str:
    """The index key: ``apis/<group>/<version>``, ``api/v1`` for the core group."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def served_group_versions() -> list[tuple[str, str]]:
    return sorted({(kind.group, kind.version) for kind in registry.kinds})


def _kinds(group: str, version: str) -> list[ResourceKind]:
    return [k for k in registry.kinds if (k.group, k.version) == (group, version)]


def group_version_document(group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI 3.0 document of a served group-version, or None."""
    kinds = _kinds(group, version)
    if not kinds:
        return None
    schemas: dict[str, Schema] = meta_definitions()
    paths: dict[str, Schema] = {}
    for kind in kinds:
        schemas[definition_name(kind)] = kind_definition(kind)
        schemas[definition_name(kind, "List")] = list_definition(kind)
        paths.update(kind_paths(kind))
    return {
        "openapi": "3.0.0",
        "info": {
            "title": settings.SPECTACULAR_SETTINGS["TITLE"],
            "version": settings.SPECTACULAR_SETTINGS["VERSION"],
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "in": "header", "name": "authorization"}
            },
        },
        "security": [{"BearerToken": []}],
    }


def _render(document: Any) -> Rendered:
    body = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return Rendered(body, hashlib.sha512(body).hexdigest().upper())


@lru_cache(maxsize=64)
def _rendered(group: str, version: str, kinds: int) -> Rendered | None:
    document = group_version_document(group, version)
    return None if document is None else _render(document)


def rendered_group_version(group: str, version: str) -> Rendered | None:
    # the kind count keys the cache: a kind registered later (a test's) renders afresh
    return _rendered(group, version, len(registry.kinds))


def rendered_index() -> Rendered:
    paths = {}
    for group, version in served_group_versions():
        rendered = rendered_group_version(group, version)
        assert rendered is not None  # a served group-version always has a document
        key = group_version_path(group, version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={rendered.etag}"}
    return _render({"paths": paths})
