"""portal.db.postgresql: Django's PostgreSQL backend without the varchar_pattern_ops twin of
each indexed text column, and the migration that drops the twins an older database has."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection

from portal.db.like_indexes import drop_like_indexes, like_index_names

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

POSTGRES = connection.vendor == "postgresql"
OUR_APPS = ("portal", "scheduling", "workspaces", "workflows", "jobclasses")


def _like_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname LIKE %s",
            ["%\\_like"],
        )
        return {name for (name,) in cursor.fetchall()}


def test_postgresql_is_served_by_the_portal_backend():
    engine = settings.DATABASES["default"]["ENGINE"]
    assert engine == ("portal.db.postgresql" if POSTGRES else "django.db.backends.sqlite3")


def test_a_migrated_database_has_no_like_twin_on_any_table():
    if not POSTGRES:  # SQLite never had them
        assert not hasattr(connection.SchemaEditorClass, "_create_like_index_sql")
        return
    assert _like_indexes() == set()
    names = like_index_names("scheduling", apps, connection.SchemaEditorClass(connection))
    # what Django would have made, e.g. for Run.phase
    assert any(name.startswith("scheduling_run_phase_") for name in names)


def test_the_migration_drops_a_twin_an_older_database_has():
    operation = drop_like_indexes("scheduling")
    # names only: an editor not entered (SQLite's refuses to enter inside a test transaction)
    names = like_index_names("scheduling", apps, connection.SchemaEditorClass(connection))
    phase = next(name for name in names if name.startswith("scheduling_run_phase_"))
    if not POSTGRES:  # nothing to drop: the operation does nothing
        operation.code(apps, connection.SchemaEditorClass(connection))
        return
    with connection.schema_editor() as editor:
        editor.execute(
            f"CREATE INDEX {editor.quote_name(phase)} ON scheduling_run (phase varchar_pattern_ops)"
        )
        assert phase in _like_indexes()
        operation.code(apps, editor)
    assert phase not in _like_indexes()
