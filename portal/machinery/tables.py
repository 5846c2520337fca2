"""Server-side printing: a ``meta.k8s.io`` Table of a list or one object, when the client's
Accept header asks for one (kubectl sends ``application/json;as=Table;v=v1;g=meta.k8s.io``
first, then ``v1beta1``, then plain JSON).

Columns come from the kind's printer ``Column``s, as ``manage.py get`` prints them: NAME
(``format: name``), the narrow columns, AGE (the translated age, as kube-apiserver's printers
send it; the creationTimestamp is in the row's object), then the wide ones at priority 1.
Each row's object is a PartialObjectMetadata (``includeObject=Metadata``, the default), the
whole object (``Object``) or nothing (``None``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone

from . import errors
from .manifest import to_manifest
from .printing import column_cells, printed_columns
from .registry import Column, ResourceKind

TABLE_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
TABLE_MEDIA_TYPES = ("application/json", "application/yaml")
INCLUDE_OBJECT = ("Metadata", "None", "Object")
NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically."
)
AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is represented in RFC3339 form and is in UTC."
)


def _media_params(media_range: str) -> tuple[str, dict[str, str]]:
    mime, *params = (part.strip() for part in media_range.split(";"))
    values = {}
    for param in params:
        key, _, value = param.partition("=")
        values[key.strip()] = value.strip().strip('"')
    return mime.lower(), values


def requested_table(accept: str) -> str | None:
    """The Table version if the first media range this server can answer asks for a
    Table; None for a plain object. A Table of another group or version, or another ``as=``,
    is skipped (the next range, else plain JSON, answers)."""
    for media_range in filter(None, (r.strip() for r in accept.split(","))):
        mime, params = _media_params(media_range)
        if "as" not in params:
            return None
        if (
            params["as"] == "Table"
            and params.get("g") == TABLE_GROUP
            and params.get("v") in TABLE_VERSIONS
            and mime in TABLE_MEDIA_TYPES
        ):
            return params["v"]
    return None


def media_type(base: str, version: str) -> str:
    """The Content-Type of a Table answer, as kube-apiserver labels it."""
    return f"{base};as=Table;v={version};g={TABLE_GROUP}"


def include_object(params: Mapping[str, str]) -> str:
    value = params.get("includeObject") or "Metadata"
    if value not in INCLUDE_OBJECT:
        raise errors.bad_request(
            f'invalid includeObject "{value}"',
            [errors.not_supported("includeObject", value, list(INCLUDE_OBJECT))],
        )
    return value


def _title(header: str) -> str:
    return " ".join(word.capitalize() for word in header.split())


def _definition(name: str, description: str, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "type": "string",
        "format": fmt,
        "description": description,
        "priority": priority,
    }


def _column(column: Column, priority: int) -> dict[str, Any]:
    return _definition(_title(column.header), column.description or column.header, priority)


def column_definitions(kind: ResourceKind) -> list[dict[str, Any]]:
    narrow, wide = printed_columns(kind)
    return [
        _definition("Name", NAME_DOC, fmt="name"),
        *(_column(c, 0) for c in narrow),
        _definition("Age", AGE_DOC),
        *(_column(c, 1) for c in wide),
    ]


def _row_object(
    obj: Any, include: str, manifest_of: Callable[[Any], dict[str, Any]]
) -> dict[str, Any] | None:
    if include == "None":
        return None
    manifest = manifest_of(obj)
    if include == "Object":
        return manifest
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{TABLE_GROUP}/v1",
        "metadata": manifest["metadata"],
    }


def table(
    kind: ResourceKind,
    objects: list[Any],
    *,
    version: str = "v1",
    include: str = "Metadata",
    metadata: Mapping[str, str] | None = None,
    manifest_of: Callable[[Any], dict[str, Any]] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The Table; ``manifest_of`` renders a row's object (a list's items leave out what the
    kind keeps out of lists, as a list does)."""
    now = now or timezone.now()
    manifest_of = manifest_of or (lambda obj: to_manifest(kind, obj))
    rows = []
    for obj in objects:
        cells, age, wide = column_cells(kind, obj, now)
        row: dict[str, Any] = {"cells": [obj.name, *cells, age, *wide]}
        row_object = _row_object(obj, include, manifest_of)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": f"{TABLE_GROUP}/{version}",
        "metadata": dict(metadata or {"resourceVersion": ""}),
        "columnDefinitions": column_definitions(kind),
        "rows": rows,
    }
