"""A migration operation dropping the ``_like`` twin indexes Django's PostgreSQL backend made
for an app's text columns before ``portal.db.postgresql`` stopped making them."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def like_index_names(app_label: str, apps: Any, schema_editor: Any) -> list[str]:
    """The name Django gives the twin of each indexed or unique column of the app's models."""
    names = []
    for model in apps.get_app_config(app_label).get_models():
        for field in model._meta.local_fields:
            if field.db_index or field.unique:
                names.append(
                    schema_editor._create_index_name(
                        model._meta.db_table, [field.column], suffix="_like"
                    )
                )
    return names


def drop_like_indexes(app_label: str) -> migrations.RunPython:
    def forwards(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return  # only PostgreSQL's backend made them
        for name in like_index_names(app_label, apps, schema_editor):
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")

    return migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)
