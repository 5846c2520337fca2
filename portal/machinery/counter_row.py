"""A one-row counter: take its next value(s) with one UPDATE ... RETURNING, which locks the row
until the caller's transaction ends (so values commit in the order they are given). The row
(pk 1) is created on first use."""

from __future__ import annotations

from typing import Any

from django.db import connection


def increment(model: Any, by: int = 1) -> int:
    """Add ``by`` to the ``value`` of ``model``'s row 1 and return the new value."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET value = value + %s WHERE id = 1 RETURNING value", [by])
        row = cursor.fetchone()
    if row is None:  # a database made before the row existed: start it now
        model.objects.get_or_create(pk=1)
        return increment(model, by)
    return int(row[0])
