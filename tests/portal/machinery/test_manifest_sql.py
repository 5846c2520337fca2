"""manifest_sql renders ``to_manifest`` in PostgreSQL: equal to the Python rendering for every
state of a row, and what a batch status write records as each Run's watch event."""

from __future__ import annotations

import datetime
import json

import pytest
from django.db import connection, models
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.machinery import history
from portal.machinery.manifest import to_manifest
from portal.machinery.manifest_sql import manifest_expression
from portal.machinery.registry import registry
from portal.models import Secret, WatchEvent
from scheduling import run_status
from scheduling.models import Run, RuntimePod
from tests.helpers.records import fresh, make_run, make_runtime

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

POSTGRES = connection.vendor == "postgresql"
RUN = registry.for_model(Run)


def _rendered(kind, pk: int):
    expression = manifest_expression(kind, "w")
    table = connection.ops.quote_name(kind.model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {expression}::text FROM {table} AS w WHERE w.id = %s", [pk])
        (text,) = cursor.fetchone()
    return json.loads(text)


# jsonb holds any text but NUL
text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
keys = text
scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | text
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3)
)
# a JSON null stored in a column (Python reads None), and the other values Python finds false
JSON_NULL = models.Value(None, output_field=models.JSONField())
falsy = st.sampled_from([{}, [], JSON_NULL, "", 0, False])
times = st.datetimes(
    min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2100, 1, 1)
).map(lambda moment: moment.replace(tzinfo=datetime.UTC))


@settings(
    max_examples=60 if POSTGRES else 1,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    labels=st.dictionaries(keys, text, max_size=3) | falsy,
    annotations=st.dictionaries(keys, text, max_size=3) | falsy,
    finalizers=st.lists(text, max_size=2) | falsy,
    owners=st.lists(st.dictionaries(keys, scalars, max_size=3), max_size=2) | falsy,
    status=documents.filter(lambda document: document is not None) | st.just(JSON_NULL),
    deleted=st.none() | times,
    created=times,
    generation=st.integers(1, 2**40),
)
def test_the_sql_manifest_equals_the_python_one(
    labels, annotations, finalizers, owners, status, deleted, created, generation
):
    if not POSTGRES:  # elsewhere the events are rendered in Python: nothing to compare
        assert manifest_expression(RUN, "w") is None
        return
    run = Run.objects.filter(name="r").first() or make_run("r")
    Run.objects.filter(pk=run.pk).update(
        labels=labels,
        annotations=annotations,
        finalizers=finalizers,
        owner_references=owners,
        status=status,
        deletion_timestamp=deleted,
        creation_timestamp=created,
        generation=generation,
    )
    assert _rendered(RUN, run.pk) == to_manifest(RUN, fresh(run))


@pytest.fixture
def runs():
    make_runtime()
    return [
        make_run("plain"),
        make_run("labelled", labels={"app": "x", "tier": "a"}, annotations={"note": "it's ö"}),
    ]


def test_a_run_is_rendered_in_sql_on_postgresql_only(runs):
    expression = manifest_expression(RUN, "w")
    assert (expression is not None) == POSTGRES
    if POSTGRES:
        for run in runs:
            assert _rendered(RUN, run.pk) == to_manifest(RUN, fresh(run))


def test_kinds_only_python_can_render_are_left_to_it():
    # RuntimePods render through their own hook; a Secret's data is encrypted at rest
    assert manifest_expression(registry.for_model(RuntimePod), "w") is None
    assert manifest_expression(registry.for_model(Secret), "w") is None


def test_a_batch_status_write_records_each_runs_manifest_as_its_watch_event(runs):
    now = timezone.now()
    writes = [
        (fresh(run), run_status.pending(fresh(run).status, "0/0 pods: waiting", now, 1))
        for run in runs
    ]
    before = history.current()
    won = run_status.write_many(writes, run_status.STILL_PENDING)
    assert won == {run.pk for run in runs}
    events = WatchEvent.objects.filter(resource_version__gt=before).order_by("resource_version")
    assert [(e.type, e.name, e.namespace, e.kind_key) for e in events] == [
        ("MODIFIED", run.name, "default", RUN.key) for run in sorted(runs, key=lambda r: r.pk)
    ]
    for event in events:
        run = Run.objects.get(name=event.name)
        assert event.resource_version == run.resource_version
        assert event.object == to_manifest(RUN, run)
        assert event.previous_labels == (run.labels or {})
        assert event.created_at is not None
    assert history.current() == max(e.resource_version for e in events)


def test_every_kind_rendered_in_sql_compiles():
    for kind in registry.kinds:
        expression = manifest_expression(kind, "w")
        if expression is None:
            continue
        table = connection.ops.quote_name(kind.model._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {expression} FROM {table} AS w LIMIT 0")


def test_batch_recorded_events_carry_their_manifests_as_watch_events(runs):
    from portal import events_recorder
    from portal.models import Event

    events_recorder.spam_filter.reset()
    event_kind = registry.for_model(Event)
    before = history.current()
    pod = RuntimePod(name="bash-a")
    written = events_recorder.record_new(
        [(fresh(run), "Scheduled", f"assigned to {pod.name}", "Normal") for run in runs], kind=RUN
    )
    assert written == len(runs)
    watched = WatchEvent.objects.filter(kind_key=event_kind.key, resource_version__gt=before)
    events = Event.objects.filter(resource_version__gt=before).order_by("resource_version")
    assert [(w.type, w.name, w.resource_version) for w in watched.order_by("resource_version")] == [
        ("ADDED", event.name, event.resource_version) for event in events
    ]
    for event in events:
        recorded = watched.get(resource_version=event.resource_version)
        assert recorded.object == to_manifest(event_kind, event)
        assert recorded.previous_labels is None  # ADDED: no state before


EVENT_BODY = st.fixed_dictionaries(
    {
        "count": st.none() | st.integers(-(2**31), 2**31 - 1),
        "first_timestamp": st.none() | text,
        "last_timestamp": st.none() | text,
        "event_time": st.none() | text,
        "source": st.none() | st.just(JSON_NULL) | st.dictionaries(keys, text, max_size=2),
        "series": st.none() | st.just(JSON_NULL) | documents,
        "related": st.none() | st.just(JSON_NULL) | st.dictionaries(keys, scalars, max_size=2),
        "involved_object": st.dictionaries(keys, scalars, max_size=3) | falsy,
        "reason": text,
        "message": text,
        "type": text,
        "action": text,
    }
)


@settings(
    max_examples=60 if POSTGRES else 1,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=EVENT_BODY,
    labels=st.dictionaries(keys, text, max_size=2) | falsy,
    deleted=st.none() | times,
)
def test_an_event_with_any_of_its_fields_unset_renders_as_python_renders_it(body, labels, deleted):
    """An Event's body is many optional fields: each is in the manifest only when not null."""
    from portal.models import Event

    kind = registry.for_model(Event)
    if not POSTGRES:
        assert manifest_expression(kind, "w") is None
        return
    event = Event.objects.filter(name="e").first() or Event.objects.create(
        name="e", namespace="default"
    )
    Event.objects.filter(pk=event.pk).update(labels=labels, deletion_timestamp=deleted, **body)
    assert _rendered(kind, event.pk) == to_manifest(kind, Event.objects.get(pk=event.pk))
