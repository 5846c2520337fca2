"""The Event writer thread: batches handed over are written behind the caller, in order, on
the thread's own connection; a writer that falls behind slows its producer, then drops and
counts; a failing batch does not stop the next; flush waits for all that was handed over."""

from __future__ import annotations

import threading

import pytest
from django.test import override_settings

from portal import event_writer, events_recorder
from portal.event_writer import EventWriter
from portal.machinery.registry import registry
from portal.models import Event
from scheduling.models import Run
from tests.helpers.records import make_run

# the thread writes on its own connection: what it commits is seen, and cleaned, as such
pytestmark = [pytest.mark.django_db(transaction=True)]
RUN = registry.for_model(Run)
THREAD = override_settings(KRUNTIMES_EVENT_WRITER="thread")


@pytest.fixture(autouse=True)
def fresh_buckets():
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default")  # a transactional test starts empty
    events_recorder.spam_filter.reset()
    yield
    events_recorder.spam_filter.reset()


@pytest.fixture
def new_writer():
    """Writers made for the test, each stopped after it (its thread ends, its connection
    closes)."""
    made = []

    def make(capacity: int = 8) -> EventWriter:
        made.append(EventWriter(capacity))
        return made[-1]

    yield make
    for writer in made:
        assert writer.stop(timeout=10)


def items(runs, reason="Scheduled"):
    return [(run, reason, f"assigned {run.name}", events_recorder.NORMAL) for run in runs]


@THREAD
def test_batches_are_written_behind_the_caller_in_the_order_handed_over(new_writer):
    writer = new_writer()
    runs = [make_run(f"r{index}") for index in range(6)]
    assert writer.submit(items(runs[:3]), RUN, events_recorder.COMPONENT)
    assert writer.submit(items(runs[3:]), RUN, events_recorder.COMPONENT)
    assert writer.flush(timeout=10)
    written = list(
        Event.objects.order_by("resource_version").values_list("involved_name", flat=True)
    )
    assert written == [run.name for run in runs]
    assert writer.written == 6


@THREAD
def test_the_caller_does_not_wait_for_the_write(new_writer):
    writer = new_writer()
    release, started = threading.Event(), threading.Event()
    original = events_recorder.record_new

    def slow(*args, **kwargs):
        started.set()
        release.wait(10)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(events_recorder, "record_new", slow)
        run = make_run("r1")
        assert writer.submit(items([run]), RUN, events_recorder.COMPONENT)  # returns at once
        assert started.wait(10)
        assert not Event.objects.exists()
        release.set()
        assert writer.flush(timeout=10)
    assert Event.objects.get().involved_name == "r1"


@THREAD
def test_a_writer_that_stays_behind_drops_and_counts(new_writer, monkeypatch, caplog):
    writer = new_writer(capacity=1)
    release = threading.Event()
    monkeypatch.setattr(event_writer, "SUBMIT_TIMEOUT", 0.2)
    monkeypatch.setattr(events_recorder, "record_new", lambda *a, **k: release.wait(10) and 0)
    runs = [make_run(f"r{index}") for index in range(3)]
    before = events_recorder.DROPPED.labels("Run")._value.get()
    assert writer.submit(items(runs[:1]), RUN, "c")  # taken by the thread, which waits
    accepted = [writer.submit(items([run]), RUN, "c") for run in runs[1:]]
    assert accepted == [True, False]  # one more fits the queue; the next waits, then drops
    assert events_recorder.DROPPED.labels("Run")._value.get() == before + 1
    assert "the Event writer is 1 batches behind" in caplog.text
    release.set()
    assert writer.flush(timeout=10)


@THREAD
def test_a_batch_that_fails_leaves_the_next_to_be_written(new_writer, monkeypatch, caplog):
    writer = new_writer()
    original = events_recorder.record_new
    calls = []

    def first_fails(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("the database went away")
        return original(*args, **kwargs)

    monkeypatch.setattr(events_recorder, "record_new", first_fails)
    writer.submit(items([make_run("r1")]), RUN, "c")
    writer.submit(items([make_run("r2")]), RUN, "c")
    assert writer.flush(timeout=10)
    assert list(Event.objects.values_list("involved_name", flat=True)) == ["r2"]
    assert "could not record 1 Events" in caplog.text


@THREAD
def test_a_forked_process_starts_a_thread_of_its_own(new_writer):
    writer = new_writer()
    writer.submit(items([make_run("r1")]), RUN, "c")
    assert writer.flush(timeout=10)
    parents, parent_thread = writer._queue, writer._thread
    writer._pid = -1  # as a forked child finds it: the parent's thread did not come along
    assert writer.flush(timeout=1)  # nothing was handed over in this "process"
    writer.submit(items([make_run("r2")]), RUN, "c")
    assert writer._queue is not parents and writer._thread is not parent_thread
    assert writer.flush(timeout=10)
    assert Event.objects.count() == 2
    done = threading.Event()
    parents.put(event_writer._Stop(done))  # a real fork leaves no such thread behind
    assert done.wait(10)


@override_settings(KRUNTIMES_EVENT_WRITER="inline")
def test_inline_writes_in_the_caller(new_writer):
    writer = new_writer()
    assert writer.submit(items([make_run("r1")]), RUN, "c")
    assert Event.objects.get().involved_name == "r1"
    assert writer._pid is None  # no thread was started


@THREAD
def test_a_stopped_writer_ends_its_thread_after_writing_what_it_holds(new_writer):
    writer = new_writer()
    writer.submit(items([make_run("r1")]), RUN, "c")
    assert writer.stop(timeout=10)
    assert Event.objects.get().involved_name == "r1"
    writer._thread.join(10)
    assert not writer._thread.is_alive()


@THREAD
def test_events_handed_over_on_commit_are_written_once_the_transaction_commits(new_writer):
    from django.db import transaction

    writer = new_writer()
    run = make_run("committed")
    with transaction.atomic():
        writer.submit_on_commit(items([run], "Started"), RUN, events_recorder.COMPONENT)
        assert writer.written == 0  # nothing handed over before the commit
    assert writer.flush(timeout=10)
    assert list(Event.objects.values_list("involved_name", "reason")) == [("committed", "Started")]


@THREAD
def test_events_of_a_transaction_that_rolled_back_are_never_written(new_writer):
    from django.db import transaction

    writer = new_writer()
    run = make_run("rolled-back")
    with transaction.atomic():
        writer.submit_on_commit(items([run], "Started"), RUN, events_recorder.COMPONENT)
        transaction.set_rollback(True)
    writer.submit(items([run], "Marker"), RUN, events_recorder.COMPONENT)
    assert writer.flush(timeout=10)
    assert list(Event.objects.values_list("reason", flat=True)) == ["Marker"]
