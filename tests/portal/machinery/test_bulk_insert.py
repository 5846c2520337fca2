"""``bulk_insert.insert`` stores rows exactly as ``bulk_create`` does (on the configured
database: SQLite locally, PostgreSQL in CI), whatever the JSON columns hold."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.machinery import bulk_insert
from portal.models import Event, WatchEvent

pytestmark = pytest.mark.django_db

BASE = 10**12  # above any version the test database has given out
FIELDS = ("kind_key", "namespace", "name", "type", "object", "previous_labels")
# what JSON text can hold that a database might mangle: quotes, backslashes, NUL-free unicode
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=20,
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def _events(start: int, objects: list, previous: list) -> list[WatchEvent]:
    return [
        WatchEvent(
            resource_version=start + index,
            kind_key="runs.kruntimes.io",
            namespace="team-a",
            name=f'run-"{index}"\\',
            type="MODIFIED",
            object=obj,
            previous_labels=labels,
        )
        for index, (obj, labels) in enumerate(zip(objects, previous, strict=True))
    ]


def _stored(first: int, count: int) -> list[tuple]:
    rows = WatchEvent.objects.filter(
        resource_version__gte=first, resource_version__lt=first + count
    ).order_by("resource_version")
    return [(row.resource_version - first, *(getattr(row, f) for f in FIELDS)) for row in rows]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    objects=st.lists(st.dictionaries(TEXT, JSON, min_size=1, max_size=5), min_size=1, max_size=5),
    data=st.data(),
)
def test_rows_read_back_as_bulk_create_stores_them(objects, data):
    previous = [
        data.draw(st.none() | st.dictionaries(TEXT, TEXT, max_size=3)) for _ in range(len(objects))
    ]
    WatchEvent.objects.filter(resource_version__gte=BASE).delete()
    bulk_insert.insert(WatchEvent, _events(BASE, objects, previous))
    WatchEvent.objects.bulk_create(_events(BASE + 100, objects, previous))
    assert _stored(BASE, len(objects)) == _stored(BASE + 100, len(objects))
    assert [row[5] for row in _stored(BASE, len(objects))] == objects


def test_none_is_null_and_auto_now_add_is_filled_in():
    before = datetime.now(UTC)
    bulk_insert.insert(WatchEvent, _events(BASE, [{"a": 1}], [None]))
    row = WatchEvent.objects.get(resource_version=BASE)
    assert row.previous_labels is None
    assert WatchEvent.objects.filter(resource_version=BASE, previous_labels__isnull=True).exists()
    assert row.created_at >= before.replace(microsecond=0)


def test_a_model_with_an_auto_primary_key_and_derived_columns():
    stamp = datetime(2026, 12, 1, 10, 11, 12, 123456, tzinfo=UTC)
    events = [
        Event(
            name=f"run-{index}.abc",
            namespace="team-a",
            uid=f"00000000-0000-0000-0000-00000000000{index}",
            involved_object={"kind": "Run", "name": f"run-{index}", "uid": f"u{index}"},
            reason="Scheduled",
            message='assigned to "pod-1" \\ ok',
            type="Normal",
            count=1,
            source={"component": "c"},
            creation_timestamp=stamp,
            resource_version=10 + index,
        )
        for index in range(3)
    ]
    for event in events:
        event.sync_columns()
    assert bulk_insert.insert(Event, events) == 3
    stored = list(Event.objects.order_by("name"))
    assert [e.name for e in stored] == ["run-0.abc", "run-1.abc", "run-2.abc"]
    assert [e.involved_uid for e in stored] == ["u0", "u1", "u2"]
    assert stored[0].message == 'assigned to "pod-1" \\ ok'
    assert stored[0].creation_timestamp == stamp
    assert stored[0].last_seen == stamp
    assert stored[0].first_timestamp is None
    assert stored[0].source == {"component": "c"}
    assert str(stored[1].uid) == "00000000-0000-0000-0000-000000000001"


def test_an_empty_batch_sends_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert bulk_insert.insert(WatchEvent, []) == 0


def test_one_statement_for_the_batch(django_assert_num_queries):
    objects = [{"n": index} for index in range(50)]
    with django_assert_num_queries(1):
        bulk_insert.insert(WatchEvent, _events(BASE, objects, [None] * 50))
    assert [row[5] for row in _stored(BASE, 50)] == objects
    assert connection.vendor in bulk_insert.JSON_VENDORS


def test_runs_with_every_column_type_read_back_as_bulk_create_stores_them():
    from datetime import timedelta

    from scheduling.models import Run

    def runs(prefix: str) -> list[Run]:
        made = []
        for index, ttl in enumerate((timedelta(seconds=90, microseconds=5), None)):
            run = Run(
                namespace="team-a",
                name=f"{prefix}-{index}",
                labels={"app": 'x"y'},
                spec={"runtime": "rt", "ttlSecondsAfterFinished": 90},
                status={"phase": "Succeeded"},
                creation_timestamp=datetime(2026, 12, 1, tzinfo=UTC),
            )
            run.sync_columns()
            run.ttl_after_finished = ttl
            made.append(run)
        return made

    bulk_insert.insert(Run, runs("a"))
    Run.objects.bulk_create(runs("b"))
    skip = {"id", "name", "uid"}
    columns = [f.attname for f in Run._meta.concrete_fields if f.attname not in skip]

    def stored(prefix: str) -> list[tuple]:
        rows = Run.objects.filter(name__startswith=f"{prefix}-").order_by("name")
        return [tuple(getattr(row, c) for c in columns) for row in rows]

    assert stored("a") == stored("b")
    assert stored("a")[0][columns.index("ttl_after_finished")] == timedelta(
        seconds=90, microseconds=5
    )


def test_a_statement_over_the_inserted_rows_runs_with_the_insert_on_postgresql_only():
    rows = _events(BASE + 5000, [{"a": 1}, {"b": 2}], [None, None])
    table = connection.ops.quote_name(WatchEvent._meta.db_table)
    # a copy of each inserted row 100 versions on: the statement sees what was inserted
    then = (
        f"INSERT INTO {table} (resource_version, kind_key, namespace, name, type, object, "
        "created_at) SELECT resource_version + 100, kind_key, namespace, name, 'DELETED', "
        "object, created_at FROM inserted"
    )
    stored = WatchEvent.objects.filter(resource_version__gte=BASE + 5000)
    if connection.vendor != "postgresql":
        with pytest.raises(ValueError, match="PostgreSQL"):
            bulk_insert.insert(WatchEvent, rows, then=then)
        assert not stored.exists()
        return
    assert bulk_insert.insert(WatchEvent, rows, then=then) == 2
    assert sorted(stored.values_list("resource_version", "type", "object")) == [
        (BASE + 5000, "MODIFIED", {"a": 1}),
        (BASE + 5001, "MODIFIED", {"b": 2}),
        (BASE + 5100, "DELETED", {"a": 1}),
        (BASE + 5101, "DELETED", {"b": 2}),
    ]
