"""``record_new``: a batch of new Events, each row the same as ``record`` would write for its
object (the rows are made from one template Event), with its watch event, its rate bucket,
and nothing else changed by a failure."""

from __future__ import annotations

import pytest
from django.test import override_settings

from portal import events_recorder
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import registry
from portal.models import Event, WatchEvent
from scheduling.models import Run
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db
RUN = registry.for_model(Run)
EVENT = registry.for_model(Event)
# differ between any two Events, or by the instant each was written
OWN = {"id", "uid", "name", "resource_version", "creation_timestamp", "last_seen"}
STAMPS = {"first_timestamp", "last_timestamp"}


@pytest.fixture(autouse=True)
def fresh_buckets():
    events_recorder.spam_filter.reset()
    yield
    events_recorder.spam_filter.reset()


def _row(event: Event, run: Run) -> dict:
    row = {
        field.name: getattr(event, field.name)
        for field in Event._meta.concrete_fields
        if field.name not in OWN | STAMPS
    }
    # the object's own columns, told apart from the other object's
    for field in ("involved_object", "involved_name", "involved_uid"):
        row.pop(field)
    assert event.involved_name == run.name and event.involved_uid == str(run.uid)
    assert event.involved_object["uid"] == str(run.uid)
    assert event.name.startswith(f"{run.name}.")
    return row


@pytest.mark.parametrize("type", [events_recorder.NORMAL, events_recorder.WARNING])
def test_a_batch_row_is_the_row_record_writes_for_the_same_event(type):
    alone, batched = make_run("alone"), make_run("batched")
    events_recorder.record(alone, "Scheduled", "assigned to p1", type=type, kind=RUN)
    assert events_recorder.record_new([(batched, "Scheduled", "assigned to p1", type)], kind=RUN)
    one = Event.objects.get(involved_uid=str(alone.uid))
    other = Event.objects.get(involved_uid=str(batched.uid))
    assert _row(other, batched) == _row(one, alone)
    assert other.involved_object == {
        **one.involved_object,
        "name": "batched",
        "uid": str(batched.uid),
        "resourceVersion": str(batched.resource_version),
    }
    assert other.first_timestamp == other.last_timestamp
    assert other.last_seen.isoformat().replace("+00:00", "Z") == other.last_timestamp
    assert other.uid != one.uid


def test_each_event_of_a_batch_is_its_own_row_with_its_watch_event():
    runs = [make_run(f"r{index}") for index in range(5)]
    messages = [f"assigned to p{index}" for index in range(5)]
    written = events_recorder.record_new(
        [
            (run, "Scheduled", text, events_recorder.NORMAL)
            for run, text in zip(runs, messages, strict=True)
        ],
        kind=RUN,
    )
    assert written == 5
    events = list(Event.objects.order_by("resource_version"))
    assert [(e.involved_name, e.message, e.action) for e in events] == [
        (run.name, text, "Scheduled") for run, text in zip(runs, messages, strict=True)
    ]
    assert len({e.uid for e in events}) == len({e.name for e in events}) == 5
    versions = [e.resource_version for e in events]
    assert versions == list(range(versions[0], versions[0] + 5))
    for event in events:
        watched = WatchEvent.objects.get(resource_version=event.resource_version)
        assert (watched.type, watched.kind_key, watched.name) == ("ADDED", EVENT.key, event.name)
        assert watched.object == to_manifest(EVENT, event)


def test_a_long_message_is_cut_in_a_batch_too():
    run = make_run("r1")
    events_recorder.record_new([(run, "Scheduled", "x" * 5000, events_recorder.NORMAL)], kind=RUN)
    message = Event.objects.get().message
    assert len(message) == events_recorder.MAX_MESSAGE_LENGTH and message.endswith("...")


@override_settings(KRUNTIMES_EVENT_BURST=2, KRUNTIMES_EVENT_REFILL_SECONDS=3600)
def test_a_batch_takes_from_each_objects_bucket_and_counts_what_it_drops():
    run, other = make_run("r1"), make_run("r2")
    before = events_recorder.DROPPED.labels("Run")._value.get()
    items = [(run, "Started", f"attempt {n}", events_recorder.NORMAL) for n in range(3)]
    items.append((other, "Started", "attempt 1", events_recorder.NORMAL))
    assert events_recorder.record_new(items, kind=RUN) == 3
    assert sorted(Event.objects.values_list("involved_name", "message")) == [
        ("r1", "attempt 0"),
        ("r1", "attempt 1"),
        ("r2", "attempt 1"),
    ]
    assert events_recorder.DROPPED.labels("Run")._value.get() == before + 1


def test_a_batch_that_cannot_be_written_is_logged_and_leaves_nothing(caplog):
    run = make_run("r1")
    taken = make_run("taken")
    events_recorder.record(taken, "Scheduled", "first")
    clash = Event.objects.get().name
    # the same name twice in one batch: the unique (namespace, name) refuses the insert
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(events_recorder.time, "time_ns", lambda: int(clash.rsplit(".", 1)[1], 16))
        written = events_recorder.record_new(
            [
                (taken, "Scheduled", "again", events_recorder.NORMAL),
                (run, "Scheduled", "x", "Normal"),
            ],
            kind=RUN,
        )
    assert written == 0
    assert "could not record 2 Events" in caplog.text
    assert list(Event.objects.values_list("message", flat=True)) == ["first"]
