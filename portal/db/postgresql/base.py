"""PostgreSQL as Django's backend has it, less the ``varchar_pattern_ops`` twin index Django
adds to every indexed or unique text column.

That twin serves ``LIKE 'prefix%'`` under a non-C collation. Nothing here filters by a prefix
(the admin's search is a ``%term%`` match, which no btree serves), so each twin was only
write cost: a Run has six, each one more index entry per bind (a 50,000-Run bind pass spent
a sixth of its time keeping them). ``portal.db.like_indexes`` drops the ones an older
database has.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base, schema


class DatabaseSchemaEditor(schema.DatabaseSchemaEditor):
    def _create_like_index_sql(self, model: Any, field: Any) -> None:
        return None


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor
