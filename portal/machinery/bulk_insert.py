"""Inserting many new rows in one statement whose rows travel as ONE JSON parameter.

Django 5.2's ``bulk_create`` on PostgreSQL sends each column as an array (``UNNEST``), and
psycopg escapes every element of a text array in Python, one regular-expression substitution
per quote: for JSON columns (a watch event carries a whole object) that costs more than the
insert itself. Here the batch is one ``json.dumps`` (in C) and the database unpacks it:
``jsonb_to_recordset`` on PostgreSQL, ``json_each`` on SQLite; any other backend gets
``bulk_create``.

The rows are inserted as ``bulk_create`` would insert them (``pre_save`` runs, so
``auto_now_add`` is filled in; a ``None`` is SQL NULL), but an auto-generated primary key is
not read back: the callers are append-only writers that never use it.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import connection, models

JSON_VENDORS = ("postgresql", "sqlite")


def _fields(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    return [
        field
        for field in model._meta.concrete_fields
        if not (field.primary_key and getattr(field, "db_returning", False))
    ]


def _plain(value: Any) -> Any:
    """A column value as JSON can carry it (the database casts it to the column's type)."""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):  # PostgreSQL's interval (SQLite: an integer)
        return f"{value // datetime.timedelta(microseconds=1)} microseconds"
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    return value


# Fields whose Python value, once of this type, is already what the column stores: the rest
# go through get_db_prep_save (a datetime, a UUID, a duration: per backend).
_PLAIN_TYPES: tuple[tuple[type[models.Field[Any, Any]], type], ...] = (
    (models.CharField, str),
    (models.TextField, str),
    (models.BooleanField, bool),
    (models.IntegerField, int),  # the big, small and positive ones too
)


@dataclass(frozen=True)
class _Column:
    field: models.Field[Any, Any]
    attname: str
    column: str
    json: bool
    plain: type | None  # see _PLAIN_TYPES
    pre_save: bool  # whether the field's pre_save does more than read the attribute


@lru_cache(maxsize=64)
def _columns(model: type[models.Model]) -> tuple[_Column, ...]:
    columns = []
    for field in _fields(model):
        plain = next((kind for base, kind in _PLAIN_TYPES if isinstance(field, base)), None)
        columns.append(
            _Column(
                field=field,
                attname=field.attname,
                column=field.column,
                json=isinstance(field, models.JSONField),
                plain=plain,
                pre_save=type(field).pre_save is not models.Field.pre_save,
            )
        )
    return tuple(columns)


def _row(columns: tuple[_Column, ...], obj: models.Model) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column in columns:
        if column.pre_save:
            value = column.field.pre_save(obj, add=True)
        else:
            value = getattr(obj, column.attname)
        if value is None:
            continue  # absent: NULL
        if column.json:
            row[column.column] = value
        elif column.plain is not None and type(value) is column.plain:
            row[column.column] = value  # what get_db_prep_save would give back
        else:
            row[column.column] = _plain(column.field.get_db_prep_save(value, connection))
    return row


@lru_cache(maxsize=32)
def _statement(model: type[models.Model], vendor: str) -> str:
    quote = connection.ops.quote_name
    fields = _fields(model)
    columns = ", ".join(quote(field.column) for field in fields)
    table = quote(model._meta.db_table)
    if vendor == "postgresql":
        types = ", ".join(f"{quote(field.column)} {field.db_type(connection)}" for field in fields)
        return (
            f"INSERT INTO {table} ({columns}) SELECT {columns} "
            f"FROM jsonb_to_recordset(%s::jsonb) AS v({types})"
        )
    # SQLite: ``->`` keeps a JSON value's JSON text (a JSON column), ``->>`` gives a scalar
    picks = ", ".join(
        f"value {'->' if isinstance(field, models.JSONField) else '->>'} '$.{field.column}'"
        for field in fields
    )
    return f"INSERT INTO {table} ({columns}) SELECT {picks} FROM json_each(%s)"


def insert(model: type[models.Model], objs: Iterable[models.Model], then: str = "") -> int:
    """Insert ``objs`` (new rows of ``model``) in one statement; how many were inserted.

    ``then`` (PostgreSQL only) is a statement over the rows just inserted, the CTE
    ``inserted``, run as part of the same statement (a history.record_sql of them)."""
    objs = list(objs)
    if not objs:
        return 0
    if connection.vendor not in JSON_VENDORS:
        if then:
            raise ValueError("a statement over the inserted rows needs PostgreSQL")
        model._default_manager.bulk_create(objs)
        return len(objs)
    return insert_rows(model, [row_of(model, obj) for obj in objs], then)


def row_of(model: type[models.Model], obj: models.Model) -> dict[str, Any]:
    """``obj`` as the column -> value row ``insert_rows`` takes (what ``insert`` sends)."""
    return _row(_columns(model), obj)


def column_value(field: models.Field[Any, Any], value: Any) -> Any:
    """One value as a row of ``insert_rows`` holds it in ``field``'s column."""
    return _plain(field.get_db_prep_save(value, connection))


def insert_rows(model: type[models.Model], rows: list[dict[str, Any]], then: str = "") -> int:
    """``insert`` for rows already made (``row_of``, ``column_value``: a batch writer that
    builds many rows from one template saves a model instance per row); PostgreSQL and
    SQLite only. A column a row leaves out is NULL."""
    if not rows:
        return 0
    vendor = connection.vendor
    if then and vendor != "postgresql":
        raise ValueError("a statement over the inserted rows needs PostgreSQL")
    if vendor not in JSON_VENDORS:
        raise ValueError(f"prepared rows are inserted on PostgreSQL and SQLite, not {vendor}")
    statement = _statement(model, vendor)
    if then:
        statement = f"WITH inserted AS ({statement} RETURNING *) {then}"
    with connection.cursor() as cursor:
        cursor.execute(statement, [json.dumps(rows, separators=(",", ":"))])
    return len(rows)
