"""PostgreSQL: a GIN index on Run.labels, so labelSelector lists (containment, key exists)
and the scheduler's affinity counts find matching Runs without reading the namespace.
SQLite has no such index (the same filters work, by scanning)."""

from django.db import migrations

INDEX = "run_labels_gin"


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    Run = apps.get_model("scheduling", "Run")
    table = schema_editor.quote_name(Run._meta.db_table)
    schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON {table} USING gin (labels)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0006_run_expires_at"),
    ]

    operations = [migrations.RunPython(create, drop)]
