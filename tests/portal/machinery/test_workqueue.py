"""The keyed work queue: repeat wake-ups of a waiting key are merged into one reconcile, a key
is held by one worker at a time and reconciled once more if woken meanwhile, a failure is
retried after a per-key backoff, a dead worker's claim expires, and the drain task is sent
after the commit that added a key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.machinery import workqueue
from portal.models import WorkItem

pytestmark = pytest.mark.django_db
Q = "test-queue"


class Clock:
    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_wake_ups_of_a_waiting_key_are_merged_into_one_reconcile(clock):
    for _ in range(5):
        workqueue.add(Q, "ns/a", now=clock.now)
    workqueue.add(Q, "ns/b", now=clock.now)
    seen: list[str] = []
    drained = workqueue.process(Q, seen.append, clock=clock)
    assert sorted(seen) == ["ns/a", "ns/b"]
    assert sorted(drained.reconciled) == ["ns/a", "ns/b"]
    assert not WorkItem.objects.exists()


def test_a_key_added_with_a_delay_waits_and_the_earlier_due_time_wins(clock):
    workqueue.add(Q, "k", after=10, now=clock.now)
    assert workqueue.process(Q, lambda key: None, clock=clock).reconciled == []
    workqueue.add(Q, "k", now=clock.now)  # a wake-up now: due now, still one row
    assert WorkItem.objects.count() == 1
    assert workqueue.process(Q, lambda key: None, clock=clock).reconciled == ["k"]


def test_a_key_held_by_a_worker_is_not_given_to_another(clock):
    workqueue.add(Q, "k", now=clock.now)
    held = workqueue.claim(Q, clock.now)
    assert held is not None and held[1] == "k"
    workqueue.add(Q, "k", now=clock.now)  # woken while held
    assert workqueue.claim(Q, clock.now) is None  # nobody else takes it meanwhile


def test_a_key_woken_while_held_is_reconciled_once_more_after(clock):
    workqueue.add(Q, "k", now=clock.now)
    seen: list[str] = []

    def reconcile(key: str) -> None:
        seen.append(key)
        if len(seen) == 1:
            workqueue.add(Q, key, now=clock.now)  # news arrived during the reconcile

    workqueue.process(Q, reconcile, clock=clock)
    assert seen == ["k", "k"]
    assert not WorkItem.objects.exists()


def test_a_key_not_woken_while_held_is_forgotten_when_done(clock):
    workqueue.add(Q, "k", now=clock.now)
    pk, _ = workqueue.claim(Q, clock.now)
    assert workqueue.done(pk) is True
    assert not WorkItem.objects.exists()


def test_a_failed_key_is_retried_after_its_own_backoff_and_a_success_resets_it(clock):
    workqueue.add(Q, "bad", now=clock.now)
    workqueue.add(Q, "good", now=clock.now)
    attempts: list[str] = []

    def reconcile(key: str) -> None:
        attempts.append(key)
        if key == "bad" and attempts.count("bad") < 3:
            raise RuntimeError("the API is down")

    first = workqueue.process(Q, reconcile, clock=clock)
    assert first.failed == ["bad"] and first.reconciled == ["good"]
    assert first.retry_in == workqueue.backoff(1) == workqueue.BASE_BACKOFF_SECONDS
    assert workqueue.process(Q, reconcile, clock=clock).reconciled == []  # still backing off
    clock.advance(workqueue.backoff(1))
    second = workqueue.process(Q, reconcile, clock=clock)
    assert second.failed == ["bad"] and second.retry_in == workqueue.backoff(2)
    clock.advance(workqueue.backoff(2))
    assert workqueue.process(Q, reconcile, clock=clock).reconciled == ["bad"]
    assert not WorkItem.objects.exists()


def test_the_backoff_doubles_per_failure_up_to_its_cap():
    assert [workqueue.backoff(n) for n in (1, 2, 3)] == [0.05, 0.1, 0.2]
    assert workqueue.backoff(40) == workqueue.MAX_BACKOFF_SECONDS


def test_a_dead_workers_claim_expires(clock):
    workqueue.add(Q, "k", now=clock.now)
    assert workqueue.claim(Q, clock.now) is not None  # a worker took it, then was killed
    assert workqueue.process(Q, lambda key: None, clock=clock).reconciled == []
    clock.advance(workqueue.LEASE.total_seconds() + 1)
    assert workqueue.process(Q, lambda key: None, clock=clock).reconciled == ["k"]


def test_a_drain_stops_at_its_limit_and_says_more_may_be_left(clock):
    workqueue.add_many(Q, [f"k{i}" for i in range(5)], now=clock.now)
    drained = workqueue.process(Q, lambda key: None, limit=3, clock=clock)
    assert len(drained.reconciled) == 3 and drained.more
    assert WorkItem.objects.count() == 2


def test_queues_are_apart(clock):
    workqueue.add(Q, "k", now=clock.now)
    workqueue.add("other", "k", now=clock.now)
    assert workqueue.process(Q, lambda key: None, clock=clock).reconciled == ["k"]
    assert list(WorkItem.objects.values_list("queue", flat=True)) == ["other"]


def test_the_drain_is_sent_after_the_commit(django_capture_on_commit_callbacks):
    sent: list[tuple] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            workqueue, "send_on_commit", lambda name, *args, **kw: sent.append((name, args, kw))
        )
        workqueue.add(Q, "k")
        workqueue.add(Q, "later", after=2.5)
    from portal import task_names

    assert sent == [
        (task_names.PROCESS_QUEUE, (Q,), {}),
        (task_names.PROCESS_QUEUE, (Q,), {"countdown": 2.5}),
    ]


def test_the_drain_task_reconciles_with_the_registered_handler(clock, monkeypatch):
    from portal import tasks

    seen: list[str] = []
    monkeypatch.setitem(workqueue._handlers, Q, seen.append)
    workqueue.add(Q, "k")
    assert tasks.process_queue(Q) == 1
    assert seen == ["k"]


def test_an_unregistered_queue_is_an_error_naming_it():
    with pytest.raises(KeyError, match="nobody-registered"):
        workqueue.process("nobody-registered")


@pytest.mark.django_db(transaction=True)
def test_workers_racing_on_one_queue_reconcile_each_key_once_and_never_together(monkeypatch):
    # two real workers, each on its own connection, drain 40 keys: no key is handled twice
    # or by both at once (the claim is a compare-and-set)
    import threading

    from django.db import connections

    monkeypatch.setattr(workqueue, "kick", lambda queue, after=0.0: None)  # the threads drain
    workqueue.add_many(Q, [f"k{i}" for i in range(40)])
    lock = threading.Lock()
    busy: set[str] = set()
    seen: list[str] = []
    overlaps: list[str] = []

    def reconcile(key: str) -> None:
        with lock:
            if key in busy:
                overlaps.append(key)
            busy.add(key)
            seen.append(key)
        threading.Event().wait(0.002)
        with lock:
            busy.discard(key)

    def worker() -> None:
        try:
            workqueue.process(Q, reconcile)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert overlaps == []
    assert sorted(seen) == sorted(f"k{i}" for i in range(40))
    assert not WorkItem.objects.exists()


def test_the_requeue_keeps_the_key_due_then_and_a_wake_up_brings_it_forward(
    django_capture_on_commit_callbacks,
):
    # the queue's side: a handler's Requeue leaves its key due later, not forgotten
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=False):
        workqueue.add("q", "k", now=now)
        drained = workqueue.process("q", lambda key: workqueue.Requeue(after=30), clock=lambda: now)
    assert drained.reconciled == ["k"] and drained.retry_in == 30
    item = WorkItem.objects.get(queue="q", key="k")
    assert item.claimed_until is None and item.due_at == now + timedelta(seconds=30)
    with django_capture_on_commit_callbacks(execute=False):
        workqueue.add("q", "k", now=now)
    assert WorkItem.objects.get(queue="q", key="k").due_at == now
