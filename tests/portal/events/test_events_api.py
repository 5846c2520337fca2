"""v1 Events recorded by controllers and served by the API (and events.k8s.io/v1 reads)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from portal import events_recorder
from portal.machinery import gc
from portal.models import Event, WatchEvent
from tests.helpers.api import assert_status, causes
from tests.helpers.rbac import bind_role, make_role
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db
CORE = "/api/v1/namespaces/default/events"
EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events"


@pytest.fixture(autouse=True)
def fresh_buckets():
    events_recorder.spam_filter.reset()
    yield
    events_recorder.spam_filter.reset()


def test_a_recorded_event_names_the_object_and_lists_by_its_fields(admin_api):
    run = make_run("r1")
    other = make_run("r2")
    events_recorder.record(run, "Scheduled", "assigned to pod p1")
    events_recorder.record(other, "Scheduled", "assigned to pod p2")

    selector = f"involvedObject.name=r1,involvedObject.namespace=default,involvedObject.kind=Run,involvedObject.uid={run.uid}"
    items = admin_api.get(CORE, {"fieldSelector": selector}).json()["items"]
    assert [item["message"] for item in items] == ["assigned to pod p1"]
    event = items[0]
    assert event["involvedObject"]["apiVersion"] == "kruntimes.io/v1alpha1"
    assert event["involvedObject"]["uid"] == str(run.uid)
    assert event["type"] == "Normal"
    assert event["count"] == 1
    assert event["source"] == {"component": events_recorder.COMPONENT}
    assert event["firstTimestamp"] == event["lastTimestamp"]
    assert "series" not in event
    assert len(admin_api.get(CORE).json()["items"]) == 2


def test_the_same_event_again_counts_up_instead_of_adding_a_row():
    run = make_run("r1")
    for _ in range(3):
        events_recorder.record(run, "BackOff", "waiting", type=events_recorder.WARNING)
    events_recorder.record(run, "BackOff", "waiting longer", type=events_recorder.WARNING)
    assert sorted(Event.objects.values_list("message", "count")) == [
        ("waiting", 3),
        ("waiting longer", 1),
    ]


@override_settings(KRUNTIMES_EVENT_BURST=3, KRUNTIMES_EVENT_REFILL_SECONDS=3600)
def test_an_object_gets_a_burst_then_its_events_are_dropped_and_counted(caplog):
    run, other = make_run("r1"), make_run("r2")
    before = events_recorder.DROPPED.labels("Run")._value.get()
    written = [events_recorder.record(run, "Started", f"attempt {n}") for n in range(5)]
    assert [w is not None for w in written] == [True, True, True, False, False]
    assert events_recorder.DROPPED.labels("Run")._value.get() == before + 2
    assert "1 dropped so far" in caplog.text
    assert events_recorder.record(other, "Started", "another object has its own bucket")
    assert Event.objects.filter(involved_name="r1").count() == 3


def test_the_bucket_refills_over_time():
    spam = events_recorder.SpamFilter()
    with override_settings(KRUNTIMES_EVENT_BURST=1, KRUNTIMES_EVENT_REFILL_SECONDS=10):
        assert spam.allow(("k",), now=0.0) == (True, 0)
        assert spam.allow(("k",), now=5.0) == (False, 1)
        assert spam.allow(("k",), now=16.0) == (True, 1)


def test_a_long_message_is_cut_to_1024_characters():
    run = make_run("r1")
    event = events_recorder.record(run, "Failed", "x" * 5000)
    assert len(event.message) == 1024
    assert event.message.endswith("...")


def test_the_api_refuses_an_unbounded_message_or_an_unknown_type(admin_api):
    body = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Run", "name": "r1", "namespace": "other"},
        "reason": "Made",
        "message": "m" * 1025,
        "type": "Odd",
        "firstTimestamp": "yesterday",
    }
    response = admin_api.post(CORE, body, format="json")
    assert_status(response, 422, "Invalid")
    assert causes(response) == {
        "message": "FieldValueTooLong",
        "type": "FieldValueNotSupported",
        "involvedObject.namespace": "FieldValueInvalid",
        "firstTimestamp": "FieldValueInvalid",
    }


def test_events_k8s_io_reads_the_same_rows_in_its_shape(admin_api):
    run = make_run("r1")
    events_recorder.record(run, "Started", "attempt 1 started")
    items = admin_api.get(EVENTS_V1, {"fieldSelector": "regarding.name=r1"}).json()["items"]
    assert len(items) == 1
    event = items[0]
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["regarding"]["uid"] == str(run.uid)
    assert event["note"] == "attempt 1 started"
    assert event["deprecatedCount"] == 1
    assert event["reportingController"] == events_recorder.COMPONENT
    assert "involvedObject" not in event
    name = event["metadata"]["name"]
    assert admin_api.get(f"{EVENTS_V1}/{name}").json()["note"] == "attempt 1 started"
    assert admin_api.delete(f"{EVENTS_V1}/{name}").status_code == 405


def test_an_unknown_field_label_is_a_bad_request(admin_api):
    response = admin_api.get(CORE, {"fieldSelector": "involvedObject.colour=red"})
    assert_status(response, 400, "BadRequest")


def test_reading_events_needs_the_grant(admin_api, user_api, user):
    events_recorder.record(make_run("r1"), "Started", "attempt 1 started")
    assert_status(user_api.get(CORE), 403, "Forbidden")
    rules = [{"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]}]
    make_role(admin_api, "events-reader", rules)
    subjects = [{"kind": "User", "name": user.username, "apiGroup": "rbac.authorization.k8s.io"}]
    bind_role(admin_api, "events-reader", "Role", "events-reader", subjects)
    assert len(user_api.get(CORE).json()["items"]) == 1


def test_the_collector_deletes_events_an_hour_after_they_were_last_seen():
    run = make_run("r1")
    old = events_recorder.record(run, "Started", "long ago")
    fresh = events_recorder.record(run, "Succeeded", "just now")
    Event.objects.filter(pk=old.pk).update(last_seen=timezone.now() - timedelta(seconds=3601))
    Event.objects.filter(pk=fresh.pk).update(last_seen=timezone.now() - timedelta(seconds=3500))
    progress = gc.expire_events(3600, batch_size=10)
    assert progress.deleted == 1
    assert list(Event.objects.values_list("message", flat=True)) == ["just now"]
    assert WatchEvent.objects.filter(kind_key="events", type="DELETED", name=old.name).exists()


def test_the_collector_deletes_a_bounded_batch():
    run = make_run("r1")
    for n in range(5):
        events_recorder.record(run, "Started", f"attempt {n}")
    Event.objects.update(last_seen=timezone.now() - timedelta(hours=2))
    progress = gc.expire_events(3600, batch_size=2)
    assert (progress.deleted, progress.more) == (2, True)
    assert Event.objects.count() == 3


def test_a_garbage_collection_pass_expires_events():
    from portal.tasks import garbage_collect

    events_recorder.record(make_run("r1"), "Started", "long ago")
    Event.objects.update(last_seen=timezone.now() - timedelta(hours=2))
    assert garbage_collect()["expired_events"] == 1
    assert not Event.objects.exists()


def test_a_watch_selected_by_involved_object_sees_only_that_objects_events():
    from portal.machinery.listing import parse_field_selector
    from portal.machinery.registry import registry
    from portal.machinery.watch import Hub, Stream, parse_request

    kind = registry.get("", "v1", "events")
    run, other = make_run("r1"), make_run("r2")
    events_recorder.record(run, "Scheduled", "first")
    params = {"fieldSelector": "involvedObject.name=r1,involvedObject.kind=Run"}
    fields = parse_field_selector(kind, params["fieldSelector"])
    hub = Hub(background=False)
    stream = Stream(parse_request(kind, "default", params, fields), hub)
    first = stream.start()
    assert [json.loads(line)["object"]["message"] for line in first] == ["first"]
    events_recorder.record(other, "Started", "not this one")
    events_recorder.record(run, "Started", "this one")
    events_recorder.record(run, "Started", "this one")  # counted: MODIFIED
    hub.poll_once()
    seen = [json.loads(line) for line in stream.next_lines()]
    assert [(e["type"], e["object"]["message"]) for e in seen] == [
        ("ADDED", "this one"),
        ("MODIFIED", "this one"),
    ]
    assert seen[-1]["object"]["count"] == 2
    stream.close()
