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
    ("managedFields", "managed_fields"),
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
# an object's key, its value, and when it is left out (None: never)
Pair = tuple[str, str, str | None]
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
    fields = _body_columns(kind)
    if fields is None or not _has_meta_columns(kind):
        return None
    quote = connection.ops.quote_name

    def col(name: str) -> str:
        return f"{alias}.{quote(kind.model._meta.get_field(name).column)}"

    # each object is built once, with every key, and the keys ``to_manifest`` leaves out
    # are deleted in one go (concatenating a part per key copied the object each time)
    meta: list[Pair] = [("name", col("name"), None)]
    if kind.namespaced:
        meta.append(("namespace", col("namespace"), None))
    deleted = col("deletion_timestamp")
    meta += [
        ("uid", f"{col('uid')}::text", None),
        ("resourceVersion", f"{col('resource_version')}::text", None),
        ("generation", col("generation"), None),
        ("creationTimestamp", _time(col("creation_timestamp")), None),
        ("deletionTimestamp", _time(deleted), f"{deleted} IS NULL"),
    ]
    for wire, attr in META_DOCUMENTS:
        meta.append((wire, col(attr), f"NOT {_truthy(col(attr))}"))
    body: list[Pair] = [
        ("apiVersion", sql_literal(kind.api_version), None),
        ("kind", sql_literal(kind.kind), None),
        ("metadata", _object(meta), None),
    ]
    for wire, field in fields:
        value = f"{alias}.{quote(field.column)}"
        absent = f"{value} IS NULL"
        if isinstance(field, models.JSONField):
            absent += f" OR jsonb_typeof({value}) = 'null'"
        body.append((wire, f"to_jsonb({value})", absent))
    return _object(body)


def _object(pairs: list[Pair]) -> str:
    """A jsonb object of (key, value, when the key is left out) pairs."""
    built = ", ".join(f"{sql_literal(key)}, {value}" for key, value, _ in pairs)
    optional = [
        f"CASE WHEN {absent} THEN {sql_literal(key)} END"
        for key, _, absent in pairs
        if absent is not None
    ]
    if not optional:
        return f"jsonb_build_object({built})"
    # ``jsonb - text[]`` deletes the keys named and passes over the NULLs
    return f"(jsonb_build_object({built}) - ARRAY[{', '.join(optional)}]::text[])"
