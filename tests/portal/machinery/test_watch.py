"""The watch history and ``?watch=true`` (Kubernetes' watch protocol): one event per write in
the write's transaction, a global resourceVersion, resume in order and exactly once, label and
field selections, bookmarks, 410 after compaction, RBAC's ``watch`` verb.

The stream tests drive a hub by hand (``Hub(background=False)``) in the test's transaction;
the HTTP tests commit (``transaction=True``) so the process's hub thread sees the writes."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import transaction

from portal.machinery import history, store
from portal.machinery.registry import registry
from portal.machinery.watch import Hub, Stream, parse_request
from portal.models import WatchEvent
from tests.helpers.api import API_VERSION, GROUP, merge_patch, widget, widgets
from tests.helpers.operator import OPERATOR

WIDGETS = None


def kind():
    return registry.get(GROUP, "v1", "widgets")


def create(name, size=1, labels=None):
    manifest = widget(name, size)
    if labels:
        manifest["metadata"]["labels"] = labels
    return store.create(kind(), manifest, namespace="default", context=OPERATOR)


def patch(name, body):
    return store.patch(kind(), "default", name, body, context=OPERATOR)


def delete(name):
    return store.delete(kind(), "default", name, context=OPERATOR)


def events(lines):
    return [json.loads(line) for line in lines]


def summary(lines):
    return [(e["type"], e["object"]["metadata"].get("name")) for e in events(lines)]


def watch(params=None, namespace="default", hub=None):
    params = dict(params or {})
    from portal.machinery.listing import parse_field_selector

    fields = parse_field_selector(kind(), params.get("fieldSelector", ""))
    stream = Stream(parse_request(kind(), namespace, params, fields), hub)
    return stream, stream.start()


# --- the history ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_write_records_one_event_with_the_objects_new_version():
    before = history.current()
    a = create("a")
    b = patch("a", {"spec": {"size": 2}})
    gone, _ = delete("a")
    rows = list(WatchEvent.objects.filter(resource_version__gt=before).order_by("resource_version"))
    assert [(r.type, r.name) for r in rows] == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert [r.resource_version for r in rows] == [
        a.resource_version,
        b.resource_version,
        gone.resource_version,
    ]
    assert rows[1].object["spec"]["size"] == 2
    assert history.current() == gone.resource_version


@pytest.mark.django_db
def test_versions_are_global_across_kinds_and_objects():
    a, b = create("a"), create("b")
    assert b.resource_version == a.resource_version + 1
    from tests.helpers.jobclasses import local_parameters_manifest

    params = store.create(
        registry.get("execution.ayatori.ddupan.top", "v1alpha1", "localexecutionparameters"),
        local_parameters_manifest("p"),
        context=OPERATOR,
    )
    assert params.resource_version == b.resource_version + 1


@pytest.mark.django_db
def test_a_write_that_rolls_back_leaves_no_event():
    before = history.current()
    with pytest.raises(RuntimeError), transaction.atomic():
        create("a")
        raise RuntimeError("the request failed after the write")
    assert not WatchEvent.objects.filter(resource_version__gt=before).exists()
    assert history.current() == before


@pytest.mark.django_db
def test_status_writers_record_their_writes_too():
    from jobclasses import status as job_status
    from tests.helpers.jobclasses import create as create_job_object
    from tests.helpers.jobclasses import job_manifest

    job = create_job_object(job_manifest("j"), namespace="default")
    seen = job.resource_version
    assert job_status.write(job, {"phase": "Running"})
    row = WatchEvent.objects.get(resource_version=job.resource_version)
    assert job.resource_version > seen
    assert (row.type, row.kind_key, row.object["status"]["phase"]) == (
        "MODIFIED",
        "jobs.execution.ayatori.ddupan.top",
        "Running",
    )


@pytest.mark.django_db
def test_a_list_is_at_the_current_version(admin_api):
    create("a")
    body = admin_api.get(widgets()).json()
    assert body["metadata"]["resourceVersion"] == str(history.current())


# --- streams ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_watch_without_a_version_starts_with_the_current_state_then_changes():
    create("a")
    create("b")
    hub = Hub(background=False)
    stream, first = watch(hub=hub)
    assert summary(first) == [("ADDED", "a"), ("ADDED", "b")]
    patch("a", {"spec": {"size": 5}})
    create("c")
    delete("b")
    hub.poll_once()
    assert summary(stream.next_lines()) == [("MODIFIED", "a"), ("ADDED", "c"), ("DELETED", "b")]
    stream.close()


@pytest.mark.django_db
def test_resuming_from_a_version_delivers_every_later_change_in_order_once():
    create("a")
    version = history.current()
    patch("a", {"spec": {"size": 2}})
    create("b")
    patch("b", {"spec": {"size": 3}})
    hub = Hub(background=False)
    stream, first = watch({"resourceVersion": str(version)}, hub=hub)
    assert summary(first) == [("MODIFIED", "a"), ("ADDED", "b"), ("MODIFIED", "b")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events(first)]
    assert versions == sorted(versions) and versions[0] > version
    hub.poll_once()  # the hub passes the same changes again: not repeated
    assert stream.next_lines() == []
    patch("a", {"spec": {"size": 9}})
    hub.poll_once()
    assert summary(stream.next_lines()) == [("MODIFIED", "a")]
    # a client resumes from the last version it saw: nothing lost, nothing repeated
    last = events(first)[-1]["object"]["metadata"]["resourceVersion"]
    again, replay = watch({"resourceVersion": last}, hub=hub)
    assert summary(replay) == [("MODIFIED", "a")]
    stream.close()
    again.close()


@pytest.mark.django_db
def test_a_label_selection_sees_objects_enter_and_leave_it():
    create("a", labels={"team": "x"})
    create("b", labels={"team": "y"})
    hub = Hub(background=False)
    stream, first = watch({"labelSelector": "team=x"}, hub=hub)
    assert summary(first) == [("ADDED", "a")]
    patch("b", {"metadata": {"labels": {"team": "x"}}})  # enters
    patch("a", {"metadata": {"labels": {"team": "z"}}})  # leaves
    patch("a", {"spec": {"size": 4}})  # out of the selection: unseen
    hub.poll_once()
    assert summary(stream.next_lines()) == [("ADDED", "b"), ("DELETED", "a")]
    stream.close()


@pytest.mark.django_db
def test_a_field_selection_on_the_name_is_what_kubectl_wait_uses():
    create("a")
    create("b")
    hub = Hub(background=False)
    stream, first = watch({"fieldSelector": "metadata.name=b"}, hub=hub)
    assert summary(first) == [("ADDED", "b")]
    patch("a", {"spec": {"size": 2}})
    delete("b")
    hub.poll_once()
    assert summary(stream.next_lines()) == [("DELETED", "b")]
    stream.close()


@pytest.mark.django_db
def test_a_namespaced_watch_sees_only_its_namespace():
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="other")
    hub = Hub(background=False)
    stream, _ = watch(hub=hub)
    everywhere, _ = watch(namespace=None, hub=hub)
    store.create(kind(), widget("x"), namespace="other", context=OPERATOR)
    create("y")
    hub.poll_once()
    assert summary(stream.next_lines()) == [("ADDED", "y")]
    assert summary(everywhere.next_lines()) == [("ADDED", "x"), ("ADDED", "y")]


@pytest.mark.django_db
def test_bookmarks_carry_the_newest_version_passed(settings):
    settings.KRUNTIMES_WATCH_BOOKMARK_SECONDS = 0
    hub = Hub(background=False)
    stream, _ = watch({"allowWatchBookmarks": "true", "labelSelector": "team=none"}, hub=hub)
    create("a")  # not selected: the bookmark still moves past it
    hub.poll_once()
    (mark,) = events(stream.next_lines())
    assert mark["type"] == "BOOKMARK"
    assert mark["object"]["metadata"]["resourceVersion"] == str(history.current())
    assert mark["object"]["kind"] == "Widget" and mark["object"]["apiVersion"] == API_VERSION


@pytest.mark.django_db
def test_send_initial_events_ends_them_with_an_annotated_bookmark():
    create("a")
    stream, first = watch(
        {
            "sendInitialEvents": "true",
            "allowWatchBookmarks": "true",
            "resourceVersionMatch": "NotOlderThan",
        },
        hub=Hub(background=False),
    )
    kinds = [e["type"] for e in events(first)]
    assert kinds == ["ADDED", "BOOKMARK"]
    assert events(first)[-1]["object"]["metadata"]["annotations"] == {
        "k8s.io/initial-events-end": "true"
    }


@pytest.mark.django_db
def test_a_version_older_than_the_history_kept_is_410_expired():
    create("a")
    old = history.current()
    create("b")
    WatchEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    assert history.compact(keep_seconds=60) >= 2
    stream, first = watch({"resourceVersion": str(old - 1)}, hub=Hub(background=False))
    (error,) = events(first)
    assert error["type"] == "ERROR"
    assert (error["object"]["kind"], error["object"]["code"], error["object"]["reason"]) == (
        "Status",
        410,
        "Expired",
    )
    # the client relists and watches from the list's version: fine again
    stream, first = watch({"resourceVersion": str(history.current())}, hub=Hub(background=False))
    assert first == []


@pytest.mark.django_db
def test_compaction_takes_every_due_event_stamped_in_the_same_instant():
    for name in "abcde":
        create(name)
    # one instant for all, the oldest stamped last (a tie is then not broken by row order)
    for event in WatchEvent.objects.order_by("-resource_version"):
        WatchEvent.objects.filter(pk=event.pk).update(created_at="2000-01-01T00:00:00Z")
    history.compact(keep_seconds=60)
    assert not WatchEvent.objects.exists()
    assert history.compacted_through() == history.current()


@pytest.mark.django_db
def test_compaction_with_nothing_old_enough_is_one_indexed_query(django_assert_num_queries):
    WatchEvent.objects.all().delete()  # what earlier tests committed may be old enough
    for name in "abc":
        create(name)
    with django_assert_num_queries(1):  # not the walk to the keep_at_least-th newest event
        assert history.compact(keep_seconds=60, keep_at_least=2) == 0
    assert WatchEvent.objects.count() >= 3


@pytest.mark.django_db
def test_compaction_deletes_a_bounded_batch_of_the_oldest_and_the_task_goes_on():
    from django.test import override_settings

    from portal import tasks

    WatchEvent.objects.all().delete()
    for name in "abcde":
        create(name)
    versions = list(WatchEvent.objects.order_by("resource_version").values_list("pk", flat=True))
    WatchEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    assert history.compact(keep_seconds=60, limit=2) == 2
    assert list(WatchEvent.objects.order_by("pk").values_list("pk", flat=True)) == versions[2:]
    assert history.compacted_through() == versions[1]
    with override_settings(KRUNTIMES_WATCH_COMPACT_BATCH=2, KRUNTIMES_WATCH_HISTORY_MIN_EVENTS=0):
        tasks.compact_watch_history()  # a full batch: it runs again (eagerly here) until done
    assert not WatchEvent.objects.exists()
    assert history.compacted_through() == versions[-1]


@pytest.mark.django_db
def test_compaction_reads_no_maximum_when_the_kept_events_are_all_newer():
    """The newest due event below the kept floor needs no search (a Max walks down through
    every newer event not yet due)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    WatchEvent.objects.all().delete()
    for name in "abcde":
        create(name)
    versions = list(WatchEvent.objects.order_by("resource_version").values_list("pk", flat=True))
    WatchEvent.objects.filter(pk__in=versions[:2]).update(created_at="2000-01-01T00:00:00Z")
    with CaptureQueriesContext(connection) as queries:
        assert history.compact(keep_seconds=60, keep_at_least=2) == 2
    assert not [q for q in queries if "MAX(" in q["sql"]]
    assert list(WatchEvent.objects.order_by("pk").values_list("pk", flat=True)) == versions[2:]


@pytest.mark.django_db
def test_compaction_keeps_the_newest_events_asked_for():
    for name in "abc":
        create(name)
    WatchEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    history.compact(keep_seconds=60, keep_at_least=1)
    assert WatchEvent.objects.count() == 1
    assert history.compacted_through() == history.current() - 1


@pytest.mark.django_db
def test_secret_values_stay_out_of_watches_as_out_of_lists():
    from tests.helpers.secrets import VALUE, VALUE_B64, secret

    secrets = registry.get("", "v1", "secrets")
    hub = Hub(background=False)
    from portal.machinery.listing import parse_field_selector

    stream = Stream(parse_request(secrets, "default", {}, parse_field_selector(secrets, "")), hub)
    stream.start()
    store.create(secrets, secret("s", {"k": VALUE_B64}), namespace="default", context=OPERATOR)
    hub.poll_once()
    lines = b"".join(stream.next_lines()).decode()
    assert '"name":"s"' in lines and VALUE_B64 not in lines and VALUE not in lines


@pytest.mark.django_db
def test_the_watch_history_keeps_no_secret_value():
    # the history is a plain JSON column: Secret data there would bypass encryption at rest
    from tests.helpers.secrets import VALUE, VALUE_B64, secret

    secrets = registry.get("", "v1", "secrets")
    store.create(secrets, secret("s", {"k": VALUE_B64}), namespace="default", context=OPERATOR)
    merge_patch_secret = {"data": {"k": VALUE_B64, "k2": VALUE_B64}}
    store.patch(secrets, "default", "s", merge_patch_secret, context=OPERATOR)
    store.delete(secrets, "default", "s", context=OPERATOR)
    rows = list(WatchEvent.objects.filter(kind_key=secrets.key).values_list("type", "object"))
    assert [kind for kind, _ in rows] == ["ADDED", "MODIFIED", "DELETED"]
    stored = json.dumps([obj for _, obj in rows])
    assert '"name": "s"' in stored and VALUE_B64 not in stored and VALUE not in stored


@pytest.mark.django_db
def test_a_watcher_that_falls_too_far_behind_is_ended():
    hub = Hub(background=False)
    stream, _ = watch(hub=hub)
    stream.watcher.limit = 2
    for name in "abc":
        create(name)
    hub.poll_once()
    assert stream.done


# --- over HTTP -------------------------------------------------------------------------------


@pytest.fixture
def default_namespace(db):
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})


def http_events(response):
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


@pytest.mark.django_db(transaction=True)
def test_watch_over_http_resumes_from_a_list_version(admin_api, default_namespace):
    admin_api.post(widgets(), widget("a"), format="json")
    listed = admin_api.get(widgets()).json()
    merge_patch(admin_api, f"{widgets()}/a", {"spec": {"size": 3}})
    admin_api.post(widgets(), widget("b"), format="json")
    response = admin_api.get(
        widgets(),
        {
            "watch": "true",
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "timeoutSeconds": "1",
        },
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in http_events(response)] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_live_watch_over_http_sees_changes_made_while_it_waits(admin_api, default_namespace):
    listed = admin_api.get(widgets()).json()

    def write_soon():
        time.sleep(0.3)
        store.create(kind(), widget("late"), namespace="default", context=OPERATOR)

    writer = threading.Thread(target=write_soon)
    writer.start()
    response = admin_api.get(
        widgets(),
        {
            "watch": "1",
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "timeoutSeconds": "2",
        },
    )
    seen = http_events(response)
    writer.join()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [("ADDED", "late")]


@pytest.mark.django_db(transaction=True)
def test_an_expired_version_over_http_is_an_error_event(admin_api, default_namespace):
    admin_api.post(widgets(), widget("a"), format="json")
    WatchEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    history.compact(keep_seconds=60)
    response = admin_api.get(widgets(), {"watch": "true", "resourceVersion": "1"})
    (event,) = http_events(response)
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


@pytest.mark.django_db
def test_bad_watch_parameters_are_a_400_status(admin_api):
    for params, field in (
        ({"resourceVersion": "abc"}, "resourceVersion"),
        ({"timeoutSeconds": "-1"}, "timeoutSeconds"),
        ({"labelSelector": "a in (b"}, "labelSelector"),
        ({"fieldSelector": "spec.size=1"}, "fieldSelector"),
    ):
        response = admin_api.get(widgets(), {"watch": "true", **params})
        assert response.status_code == 400, response.content
        assert response.json()["details"]["causes"][0]["field"] == field


@pytest.mark.django_db
def test_watch_needs_the_watch_verb(user, user_api, admin_api):
    from tests.helpers.rbac import READ_WIDGETS, TESTING, bind_role, make_role

    make_role(admin_api, "read", READ_WIDGETS)
    bind_role(admin_api, "read", "Role", "read")
    assert user_api.get(widgets()).status_code == 200
    response = user_api.get(widgets(), {"watch": "true", "timeoutSeconds": "1"})
    assert response.status_code == 403 and response.json()["kind"] == "Status"
    watching = [{"apiGroups": [TESTING], "resources": ["widgets"], "verbs": ["watch"]}]
    make_role(admin_api, "watch", watching)
    bind_role(admin_api, "watch", "Role", "watch")
    since = str(history.current())
    response = user_api.get(
        widgets(), {"watch": "true", "timeoutSeconds": "1", "resourceVersion": since}
    )
    assert response.status_code == 200
    assert http_events(response) == []
    # a namespaced grant is no cluster-wide watch
    everywhere = user_api.get(f"/apis/{TESTING}/v1/widgets", {"watch": "true"})
    assert everywhere.status_code == 403


@pytest.mark.django_db
def test_beat_compacts_the_history_by_age_and_keeps_the_newest(settings):
    from portal.tasks import compact_watch_history

    for name in "abcd":
        create(name)
    WatchEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    create("fresh")
    settings.KRUNTIMES_WATCH_HISTORY_SECONDS = 60
    settings.KRUNTIMES_WATCH_HISTORY_MIN_EVENTS = 2
    assert compact_watch_history() >= 3
    assert list(WatchEvent.objects.values_list("name", flat=True).order_by("resource_version")) == [
        "d",
        "fresh",
    ]
    assert "compact-watch-history" in settings.CELERY_BEAT_SCHEDULE


TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.mark.django_db
def test_a_table_watch_sends_one_row_tables_with_the_columns_first_only():
    """kubectl get -w asks for Tables: each event's object is a Table of its one row."""
    from portal.machinery.listing import parse_field_selector

    create("a", size=3)
    hub = Hub(background=False)
    request = parse_request(kind(), "default", {}, parse_field_selector(kind(), ""), TABLE_ACCEPT)
    stream = Stream(request, hub)
    (first,) = events(stream.start())
    assert first["type"] == "ADDED" and first["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]][0] == "Name"
    assert first["object"]["rows"][0]["cells"][0] == "a"
    assert first["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    patch("a", {"spec": {"size": 4}})
    hub.poll_once()
    (second,) = events(stream.next_lines())
    assert second["type"] == "MODIFIED" and second["object"]["columnDefinitions"] == []
    assert second["object"]["rows"][0]["cells"][0] == "a"


@pytest.mark.django_db(transaction=True)
def test_an_open_watch_holds_no_database_connection(admin_api, default_namespace):
    """Only the hub reads the history: each request thread gives its connection back."""
    from django.db import connection

    since = str(history.current())
    response = admin_api.get(
        widgets(), {"watch": "true", "resourceVersion": since, "timeoutSeconds": "1"}
    )
    assert connection.connection is None  # closed by the view before streaming
    assert http_events(response) == []


@pytest.mark.django_db
def test_the_migration_scrubs_secret_values_the_history_kept_before():
    import importlib

    from django.apps import apps

    migration = importlib.import_module("portal.migrations.0009_scrub_secret_history")
    old = {"kind": "Secret", "metadata": {"name": "old"}, "data": {"k": "c2VjcmV0"}}
    other = {"kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "plain"}}
    for version, (key, obj) in enumerate([("secrets", old), ("configmaps", other)], 10**12):
        WatchEvent.objects.create(
            resource_version=version,
            kind_key=key,
            namespace="default",
            name=obj["metadata"]["name"],
            type="ADDED",
            object=obj,
        )
    migration.scrub(apps, None)
    kept = dict(WatchEvent.objects.values_list("kind_key", "object"))
    assert kept["secrets"] == {"kind": "Secret", "metadata": {"name": "old"}}
    assert kept["configmaps"] == other
