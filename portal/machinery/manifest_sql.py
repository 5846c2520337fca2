"""``to_manifest`` as a PostgreSQL expression over a row: a batch writer records its watch
events in the statement that writes the rows.

A status writer that updates hundreds of rows in one statement otherwise reads every row back,
builds a model instance and a manifest per row in Python and sends them all to the database
again, which cost more than the write. Here the manifest is built where the row is:
``jsonb_build_object`` over the columns, with exactly the rules ``to_manifest`` and
``object_meta`` follow (metadata strings and their order of keys do not matter: the event
column is ``jsonb``; labels, annotations, finalizers and ownerReferences only when truthy; a
body field only when not null; times in whole seconds, UTC, ``Z``). A test holds the two equal.

Only kinds rendered the generic way qualify (no ``to_manifest`` hook, every body field a
plain column); for the others, and on any other database, ``manifest_expression`` is None and
the caller renders in Python.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, models

from .registry import ResourceKind

# metadata documents, copied when truthy (as object_meta does)
META_DOCUMENTS = (
    ("labels", "labels"),
    ("annotations", "annotations"),
    ("finalizers", "finalizers"),
    ("ownerReferences", "owner_references"),
)
# body columns whose value to_jsonb turns into what the Python value serialises to
PLAIN_BODY_TYPES = (
    "JSONField",
    "CharField",
    "TextField",
    "IntegerField",
    "BigIntegerField",
    "PositiveIntegerField",
    "SmallIntegerField",
    "BooleanField",
)
# JSON values Python takes as false (``if value:``)
FALSY_JSON = ("null", "{}", "[]", '""', "0", "false")


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _time(column: str) -> str:
    # format_time: RFC 3339, UTC, whole seconds (strftime truncates, so does to_char)
    return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"""


def _truthy(column: str) -> str:
    falsy = ", ".join(f"{sql_literal(value)}::jsonb" for value in FALSY_JSON)
    return f"({column} IS NOT NULL AND {column} NOT IN ({falsy}))"


def _body_columns(kind: ResourceKind) -> list[tuple[str, models.Field[Any, Any]]] | None:
    found = []
    for wire in kind.body:
        try:
            field = kind.model._meta.get_field(kind.attr(wire))
        except Exception:  # noqa: BLE001 - not a column (a write-only attribute): Python
            return None
        if not isinstance(field, models.Field) or type(field).__name__ not in PLAIN_BODY_TYPES:
            return None  # an encrypted or custom column: only Python knows its value
        found.append((wire, field))
    return found


def _has_meta_columns(kind: ResourceKind) -> bool:
    names = {field.name for field in kind.model._meta.concrete_fields}
    meta = {"name", "uid", "resource_version", "generation", "creation_timestamp"}
    meta |= {"deletion_timestamp", *(attr for _, attr in META_DOCUMENTS)}
    return meta | ({"namespace"} if kind.namespaced else set()) <= names


def manifest_expression(kind: ResourceKind, alias: str) -> str | None:
    """A ``jsonb`` expression equal to ``to_manifest(kind, row)`` for the row ``alias``
    (PostgreSQL), or None when only Python can render this kind here."""
    if connection.vendor != "postgresql" or kind.to_manifest is not None:
        return None
    body = _body_columns(kind)
    if body is None or not _has_meta_columns(kind):
        return None
    quote = connection.ops.quote_name

    def col(name: str) -> str:
        return f"{alias}.{quote(kind.model._meta.get_field(name).column)}"

    meta = [f"'name', {col('name')}"]
    if kind.namespaced:
        meta.append(f"'namespace', {col('namespace')}")
    meta += [
        f"'uid', {col('uid')}::text",
        f"'resourceVersion', {col('resource_version')}::text",
        f"'generation', {col('generation')}",
        f"'creationTimestamp', {_time(col('creation_timestamp'))}",
    ]
    parts = [f"jsonb_build_object({', '.join(meta)})"]
    deleted = col("deletion_timestamp")
    parts.append(
        f"CASE WHEN {deleted} IS NULL THEN '{{}}'::jsonb "
        f"ELSE jsonb_build_object('deletionTimestamp', {_time(deleted)}) END"
    )
    for wire, attr in META_DOCUMENTS:
        value = col(attr)
        parts.append(
            f"CASE WHEN {_truthy(value)} THEN jsonb_build_object({sql_literal(wire)}, {value}) "
            "ELSE '{}'::jsonb END"
        )
    metadata = " || ".join(parts)
    manifest = [
        "jsonb_build_object("
        f"'apiVersion', {sql_literal(kind.api_version)}, 'kind', {sql_literal(kind.kind)}, "
        f"'metadata', {metadata})"
    ]
    for wire, field in body:
        value = f"{alias}.{quote(field.column)}"
        present = f"{value} IS NOT NULL"
        if isinstance(field, models.JSONField):
            present += f" AND jsonb_typeof({value}) <> 'null'"
        manifest.append(
            f"CASE WHEN {present} THEN jsonb_build_object({sql_literal(wire)}, to_jsonb({value})) "
            "ELSE '{}'::jsonb END"
        )
    return "(" + " || ".join(manifest) + ")"
