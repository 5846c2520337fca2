"""Kubernetes deletion: deletionTimestamp and finalizers, owner-reference cascade in the
background (Background, Foreground, Orphan), Namespace termination, and the beat pass
(the gc work queue itself: test_gc_queue.py)."""

from __future__ import annotations

import pytest

from portal import tasks
from portal.machinery import gc, gc_queue, store, workqueue
from portal.machinery.registry import registry
from portal.models import WorkItem
from tests.helpers.api import assert_status, gadgets, merge_patch, widget, widgets
from tests.helpers.operator import OPERATOR
from tests.helpers.ownership import gadget, names, owned_by

pytestmark = pytest.mark.django_db


def test_delete_without_finalizers_is_immediate(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    body = admin_api.delete(f"{widgets()}/a").json()
    assert body["status"] == "Success" and body["details"]["name"] == "a"
    assert_status(admin_api.get(f"{widgets()}/a"), 404, "NotFound")


def test_finalizer_holds_the_object_until_removed(admin_api):
    admin_api.post(
        widgets(), widget("a", metadata={"finalizers": ["example.com/hold"]}), format="json"
    )
    held = admin_api.delete(f"{widgets()}/a")
    assert held.status_code == 200
    meta = held.json()["metadata"]
    assert meta["deletionTimestamp"] and meta["finalizers"] == ["example.com/hold"]
    # a second delete changes nothing (not even resourceVersion) and answers with the object
    again = admin_api.delete(f"{widgets()}/a").json()["metadata"]
    assert (again["deletionTimestamp"], again["resourceVersion"]) == (
        meta["deletionTimestamp"],
        meta["resourceVersion"],
    )
    released = merge_patch(admin_api, f"{widgets()}/a", {"metadata": {"finalizers": None}})
    assert released.status_code == 200
    assert_status(admin_api.get(f"{widgets()}/a"), 404, "NotFound")


def test_no_new_finalizers_while_terminating(admin_api):
    admin_api.post(
        widgets(), widget("a", metadata={"finalizers": ["example.com/hold"]}), format="json"
    )
    admin_api.delete(f"{widgets()}/a")
    response = merge_patch(
        admin_api,
        f"{widgets()}/a",
        {"metadata": {"finalizers": ["example.com/hold", "example.com/another"]}},
    )
    assert_status(response, 422, "Invalid")


def test_delete_precondition_on_resource_version(admin_api):
    admin_api.post(widgets(), widget("a"), format="json")
    merge_patch(admin_api, f"{widgets()}/a", {"spec": {"size": 2}})
    response = admin_api.delete(
        f"{widgets()}/a", {"preconditions": {"resourceVersion": "1"}}, format="json"
    )
    assert_status(response, 409, "Conflict")
    assert names(admin_api) == ["a"]


def _written_meanwhile(monkeypatch, times: int = 1):
    """Another writer changes the widget after each of the first ``times`` reads a delete
    makes (a controller's status write landing between the delete's read and its write)."""
    real, calls = store.get_object, []

    def read_then_written(kind, namespace, name, *args, **kwargs):
        found = real(kind, namespace, name, *args, **kwargs)
        if kind.plural == "widgets" and len(calls) < times:
            calls.append(name)
            type(found).objects.filter(pk=found.pk).update(
                resource_version=found.resource_version + 1000
            )
        return found

    monkeypatch.setattr(store, "get_object", read_then_written)
    return calls


def test_a_delete_without_preconditions_applies_to_whatever_is_current(admin_api, monkeypatch):
    """As the API server's delete: a write between its read and its own is no conflict unless
    the client named a version; it reads again and deletes what is there."""
    admin_api.post(
        widgets(), widget("a", metadata={"finalizers": ["example.com/hold"]}), format="json"
    )
    calls = _written_meanwhile(monkeypatch, times=2)
    held = admin_api.delete(f"{widgets()}/a")
    assert held.status_code == 200, held.json()
    assert held.json()["metadata"]["deletionTimestamp"]
    assert calls == ["a", "a"]  # it read again after each lost race


def test_a_delete_naming_a_version_is_a_conflict_when_another_write_won(admin_api, monkeypatch):
    created = admin_api.post(
        widgets(), widget("a", metadata={"finalizers": ["example.com/hold"]}), format="json"
    ).json()
    _written_meanwhile(monkeypatch)
    version = created["metadata"]["resourceVersion"]
    response = admin_api.delete(
        f"{widgets()}/a", {"preconditions": {"resourceVersion": version}}, format="json"
    )
    assert_status(response, 409, "Conflict")
    assert "deletionTimestamp" not in admin_api.get(f"{widgets()}/a").json()["metadata"]


def test_background_cascade_deletes_dependents(
    admin_api, owner, django_capture_on_commit_callbacks
):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    admin_api.post(widgets(), widget("stranger"), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.delete(f"{gadgets()}/owner")
    assert names(admin_api) == ["stranger"]


def test_dependent_with_a_living_second_owner_survives(
    admin_api, owner, django_capture_on_commit_callbacks
):
    other = gadget(admin_api, "other")
    refs = (
        owned_by(owner)["metadata"]["ownerReferences"]
        + owned_by(other)["metadata"]["ownerReferences"]
    )
    admin_api.post(widgets(), widget("shared", metadata={"ownerReferences": refs}), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.delete(f"{gadgets()}/owner")
    assert names(admin_api) == ["shared"]


def test_orphan_keeps_dependents_and_strips_the_reference(
    admin_api, owner, django_capture_on_commit_callbacks
):
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.delete(f"{gadgets()}/owner?propagationPolicy=Orphan")
    child = admin_api.get(f"{widgets()}/child").json()
    assert "ownerReferences" not in child["metadata"]


def test_foreground_keeps_owner_until_dependents_are_gone(
    admin_api, owner, django_capture_on_commit_callbacks
):
    meta = {**owned_by(owner)["metadata"], "finalizers": ["example.com/hold"]}
    admin_api.post(widgets(), widget("child", metadata=meta), format="json")
    with django_capture_on_commit_callbacks(execute=True):
        body = admin_api.delete(
            f"{gadgets()}/owner", {"propagationPolicy": "Foreground"}, format="json"
        ).json()
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    child = admin_api.get(f"{widgets()}/child").json()
    assert child["metadata"]["deletionTimestamp"]  # deleting, held by its own finalizer
    assert admin_api.get(f"{gadgets()}/owner").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        merge_patch(admin_api, f"{widgets()}/child", {"metadata": {"finalizers": None}})
    assert_status(admin_api.get(f"{gadgets()}/owner"), 404, "NotFound")


def test_unknown_propagation_policy(admin_api, owner):
    response = admin_api.delete(f"{gadgets()}/owner?propagationPolicy=Sideways")
    assert_status(response, 422, "Invalid")


def test_beat_pass_heals_a_lost_cascade_event(admin_api, owner):
    """The on-commit event is never sent here (callbacks not executed): beat finds the orphan."""
    admin_api.post(widgets(), widget("child", **owned_by(owner)), format="json")
    admin_api.delete(f"{gadgets()}/owner")
    assert names(admin_api) == ["child"]
    result = tasks.garbage_collect()
    assert result["owners"] == 1  # the owner's key is added to the gc queue
    workqueue.process(gc_queue.QUEUE)
    assert names(admin_api) == []


def test_gc_pass_is_batched_and_resumable(admin_api, owner, settings, monkeypatch):
    for i in range(5):
        admin_api.post(widgets(), widget(f"c{i}", **owned_by(owner)), format="json")
    kind = registry.get("testing.kruntimes.io", "v1", "gadgets")
    store.delete(kind, None, "owner", context=OPERATOR)
    WorkItem.objects.all().delete()  # as if the deletion's wake-up was lost
    gone, resume = gc.gone_owners(0, batch_size=2)
    assert gone == {owner["metadata"]["uid"]} and resume is not None
    gone, resume = gc.gone_owners(resume, batch_size=2)
    assert gone == {owner["metadata"]["uid"]} and resume is not None
    assert gc.gone_owners(resume, batch_size=2)[1] is None  # the last, short page
    settings.KRUNTIMES_GC_BATCH_SIZE = 2
    tasks.garbage_collect()  # eager: re-enqueues itself until done
    assert list(WorkItem.objects.values_list("key", flat=True)) == [owner["metadata"]["uid"]]
    workqueue.process(gc_queue.QUEUE)  # two dependents a batch, requeued until done
    assert names(admin_api) == []


def test_namespace_termination_deletes_content_then_the_namespace(
    admin_api, django_capture_on_commit_callbacks
):
    assert (
        admin_api.post(
            "/api/v1/namespaces", {"metadata": {"name": "team"}}, format="json"
        ).status_code
        == 201
    )
    admin_api.post(widgets("team"), widget("a"), format="json")
    admin_api.post(
        widgets("team"), widget("held", metadata={"finalizers": ["example.com/x"]}), format="json"
    )
    with django_capture_on_commit_callbacks(execute=True):
        ns = admin_api.delete("/api/v1/namespaces/team").json()
    assert ns["status"]["phase"] == "Terminating"
    body = assert_status(
        admin_api.post(widgets("team"), widget("late"), format="json"), 403, "Forbidden"
    )
    assert "being terminated" in body["message"]
    assert names(admin_api, "team") == ["held"]  # the held one waits for its finalizer
    assert admin_api.get("/api/v1/namespaces/team").status_code == 200
    merge_patch(admin_api, f"{widgets('team')}/held", {"metadata": {"finalizers": None}})
    tasks.garbage_collect()
    assert_status(admin_api.get("/api/v1/namespaces/team"), 404, "NotFound")


def test_default_namespace_exists_and_names_are_labels(admin_api):
    assert admin_api.get("/api/v1/namespaces/default").json()["status"]["phase"] == "Active"
    response = admin_api.post("/api/v1/namespaces", {"metadata": {"name": "a.b"}}, format="json")
    assert_status(response, 422, "Invalid")


def test_owner_links_follow_owner_references_from_create_to_update(django_assert_num_queries):
    from portal.models import OwnerLink
    from tests.helpers.records import make_run

    owner = make_run("owner")
    ref = {
        "apiVersion": "kruntimes.io/v1alpha1",
        "kind": "Run",
        "name": "owner",
        "uid": str(owner.uid),
    }
    plain = make_run("plain")
    with django_assert_num_queries(0):  # a new object without owners has no links to keep
        OwnerLink.record(registry.for_model(type(plain)), plain, created=True)
    dependent = make_run("dependent", owner_references=[ref])
    assert OwnerLink.has_dependents(owner.uid)
    dependent.owner_references = []
    OwnerLink.record(registry.for_model(type(dependent)), dependent)
    assert not OwnerLink.has_dependents(owner.uid)
