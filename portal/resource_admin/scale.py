"""Change lists at a million rows: a count the planner estimates when an exact one would be
expensive, and filters whose choices come from small tables instead of a scan of the big one.

``EstimatedCountPaginator``: on PostgreSQL the count of an unfiltered list is
``pg_class.reltuples`` and of a filtered one the planner's row estimate (EXPLAIN); either is
used only above ``KRUNTIMES_ADMIN_EXACT_COUNT_LIMIT``, below it (and on SQLite) the count is
exact. ``NamespaceFilter`` lists the Namespace objects (``ChoicesFromTable`` is the base of
such filters, e.g. the Run admin's runtime filter).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property


def estimated_count(queryset: Any) -> int | None:
    """The planner's row estimate for ``queryset`` on PostgreSQL (None elsewhere)."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    query = queryset.query
    with connection.cursor() as cursor:
        if not query.where:  # the whole table: the statistics' row count
            cursor.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                [queryset.model._meta.db_table],
            )
            row = cursor.fetchone()
            if row is not None and row[0] >= 0:
                return int(row[0])
        try:
            sql, params = queryset.order_by().values("pk").query.sql_with_params()
        except EmptyResultSet:  # a filter no row can pass (``namespace__in=[]``)
            return 0
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedCountPaginator(Paginator):
    @cached_property
    def count(self) -> int:
        limit = settings.KRUNTIMES_ADMIN_EXACT_COUNT_LIMIT
        estimate = estimated_count(self.object_list) if hasattr(self.object_list, "query") else None
        if estimate is not None and estimate > limit:
            return estimate
        return super().count


class ChoicesFromTable(admin.SimpleListFilter):
    """Choices read from a small table (distinct values there), never from the listed one."""

    column = ""

    def choices_from(self) -> list[str]:  # pragma: no cover - each filter says
        raise NotImplementedError

    def lookups(self, request, model_admin):
        return [(value, value) for value in self.choices_from()]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(**{self.column: self.value()})
        return queryset


class NamespaceFilter(ChoicesFromTable):
    title = "namespace"
    parameter_name = "namespace__exact"
    column = "namespace"

    def choices_from(self) -> list[str]:
        from portal.models import Namespace

        return list(Namespace.objects.order_by("name").values_list("name", flat=True)[:500])
