"""The garbage collector on the ``gc`` work queue: a deletion adds its owner's UID (once, however
often it is woken), the handler deletes the dependents of a gone owner and releases a
foreground owner once its dependents are gone, a big owner is collected batch by batch
(requeued), a failure is retried after a backoff, and beat's pass adds keys instead of
collecting inline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal import tasks
from portal.machinery import gc, gc_queue, store, workqueue
from portal.machinery.registry import registry
from portal.models import WorkItem
from tests.helpers.api import gadgets, merge_patch, widget, widgets
from tests.helpers.operator import OPERATOR
from tests.helpers.ownership import gadget, names, owned_by

pytestmark = pytest.mark.django_db


def gc_keys() -> list[str]:
    return sorted(WorkItem.objects.filter(queue=gc_queue.QUEUE).values_list("key", flat=True))


def held(owner: dict) -> dict:
    return {"metadata": {**owned_by(owner)["metadata"], "finalizers": ["example.com/hold"]}}


def test_deleting_an_owner_with_dependents_adds_its_uid_once(admin_api, owner):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    admin_api.post(widgets(), widget("stranger"), format="json")
    admin_api.delete(f"{gadgets()}/owner")  # the commit's drain is not run here
    assert gc_keys() == [owner["metadata"]["uid"]]
    assert names(admin_api) == ["child", "stranger"]  # nothing collected inline


def test_an_owner_without_dependents_adds_no_key(admin_api, owner):
    admin_api.delete(f"{gadgets()}/owner")
    assert gc_keys() == []


def test_wake_ups_of_one_foreground_owner_merge_into_one_key(admin_api, owner):
    for i in range(3):
        admin_api.post(widgets(), widget(f"c{i}", **held(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner", {"propagationPolicy": "Foreground"}, format="json")
    workqueue.process(gc_queue.QUEUE)
    assert gc_keys() == []
    for i in range(3):  # each dependent's deletion wakes its owner
        merge_patch(admin_api, f"{widgets()}/c{i}", {"metadata": {"finalizers": None}})
    assert gc_keys() == [owner["metadata"]["uid"]]
    assert WorkItem.objects.filter(queue=gc_queue.QUEUE).count() == 1


def test_a_deleted_dependent_wakes_only_its_own_owners(admin_api, owner):
    other = gadget(admin_api, "other")
    admin_api.post(widgets(), widget("mine", **owned_by(owner)), format="json")
    admin_api.post(widgets(), widget("theirs", **owned_by(other)), format="json")
    admin_api.delete(f"{widgets()}/mine")
    assert gc_keys() == [owner["metadata"]["uid"]]


def test_the_handler_deletes_the_dependents_of_a_gone_owner(admin_api, owner):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    admin_api.post(widgets(), widget("stranger"), format="json")
    admin_api.delete(f"{gadgets()}/owner")
    drained = workqueue.process(gc_queue.QUEUE)
    # (once more after: the child's deletion woke its owner meanwhile, which finds nothing)
    assert set(drained.reconciled) == {owner["metadata"]["uid"]}
    assert names(admin_api) == ["stranger"]
    assert gc_keys() == []


def test_the_handler_leaves_the_dependents_of_a_living_owner(admin_api, owner):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    assert tasks.collect_owner_key(owner["metadata"]["uid"]) is None
    assert names(admin_api) == ["child"]


def test_the_handler_releases_a_foreground_owner_once_its_dependents_are_gone(admin_api, owner):
    admin_api.post(widgets(), widget("child", **held(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner", {"propagationPolicy": "Foreground"}, format="json")
    workqueue.process(gc_queue.QUEUE)
    child = admin_api.get(f"{widgets()}/child").json()
    assert child["metadata"]["deletionTimestamp"]  # deleting, held by its own finalizer
    assert admin_api.get(f"{gadgets()}/owner").status_code == 200  # waits for its dependent
    merge_patch(admin_api, f"{widgets()}/child", {"metadata": {"finalizers": None}})
    assert admin_api.get(f"{gadgets()}/owner").status_code == 200  # until the key is handled
    workqueue.process(gc_queue.QUEUE)
    assert admin_api.get(f"{gadgets()}/owner").status_code == 404


def test_orphaning_strips_references_and_adds_no_key(admin_api, owner):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner?propagationPolicy=Orphan")
    assert gc_keys() == []
    assert "ownerReferences" not in admin_api.get(f"{widgets()}/child").json()["metadata"]


def test_a_big_owner_is_collected_batch_by_batch(admin_api, owner, settings):
    for i in range(5):
        admin_api.post(widgets(), widget(f"c{i}", **owned_by(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner")
    settings.KRUNTIMES_GC_BATCH_SIZE = 2
    uid = owner["metadata"]["uid"]
    assert tasks.collect_owner_key(uid) == workqueue.Requeue(after=0)
    assert len(names(admin_api)) == 3
    drained = workqueue.process(gc_queue.QUEUE)
    assert set(drained.reconciled) == {uid}  # requeued at once until the last batch
    assert names(admin_api) == []
    assert gc_keys() == []


def test_held_dependents_do_not_keep_their_owner_requeued(admin_api, owner, settings):
    """A full batch of dependents already deleting (held by their finalizers) is not read again
    and again: their own deletions wake the owner."""
    for i in range(3):
        admin_api.post(widgets(), widget(f"h{i}", **held(owner)), format="json")
    admin_api.post(widgets(), widget("plain", **owned_by(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner")
    settings.KRUNTIMES_GC_BATCH_SIZE = 2
    uid = owner["metadata"]["uid"]
    assert tasks.collect_owner_key(uid) == workqueue.Requeue(after=0)
    calls = 1
    while tasks.collect_owner_key(uid) is not None:  # the rest are reached past the held ones
        calls += 1
        assert calls <= 3
    assert names(admin_api) == ["h0", "h1", "h2"]  # each deleting, held


def test_a_failing_owner_is_retried_after_a_backoff(admin_api, owner, monkeypatch):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner")
    real = gc.collect_owner

    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(gc, "collect_owner", broken)
    now = timezone.now()
    drained = workqueue.process(gc_queue.QUEUE, clock=lambda: now)
    assert drained.failed == [owner["metadata"]["uid"]] and drained.retry_in == pytest.approx(
        workqueue.backoff(1)
    )
    item = WorkItem.objects.get(queue=gc_queue.QUEUE)
    assert item.failures == 1 and item.due_at > now
    assert workqueue.process(gc_queue.QUEUE, clock=lambda: now).failed == []  # not yet due
    monkeypatch.setattr(gc, "collect_owner", real)
    later = now + timedelta(seconds=1)
    assert set(workqueue.process(gc_queue.QUEUE, clock=lambda: later).reconciled) == {
        owner["metadata"]["uid"]
    }
    assert names(admin_api) == []


def test_a_key_that_is_no_uid_is_dropped(admin_api):
    assert tasks.collect_owner_key("not-a-uid") is None


def test_beat_adds_the_keys_of_gone_owners_and_collects_nothing_inline(admin_api, owner):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    kind = registry.get("testing.kruntimes.io", "v1", "gadgets")
    kind.model.objects.filter(name="owner").delete()  # gone without an event
    assert gc_keys() == []
    tasks.garbage_collect()
    assert gc_keys() == [owner["metadata"]["uid"]]
    assert names(admin_api) == ["child"]
    workqueue.process(gc_queue.QUEUE)
    assert names(admin_api) == []


def test_beat_adds_the_keys_of_foreground_owners(admin_api, owner):
    admin_api.post(widgets(), widget("child", **held(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner", {"propagationPolicy": "Foreground"}, format="json")
    WorkItem.objects.all().delete()  # as if the wake-ups were lost
    widget_kind = registry.get("testing.kruntimes.io", "v1", "widgets")
    widget_kind.model.objects.filter(name="child").delete()  # gone without an event
    tasks.garbage_collect()
    assert gc_keys() == [owner["metadata"]["uid"]]
    workqueue.process(gc_queue.QUEUE)
    assert admin_api.get(f"{gadgets()}/owner").status_code == 404


def test_the_store_sends_no_collector_task_per_deletion(
    admin_api, owner, monkeypatch, django_capture_on_commit_callbacks
):
    """A deletion's only message is the drain of the gc queue."""
    from portal.machinery import events

    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(events, "_send", lambda task, args, options: sent.append((task.name, args)))
    kind = registry.get("testing.kruntimes.io", "v1", "gadgets")
    with django_capture_on_commit_callbacks(execute=True):
        store.delete(kind, None, "owner", context=OPERATOR)
    assert sent == [("portal.tasks.process_queue", (gc_queue.QUEUE,))]
