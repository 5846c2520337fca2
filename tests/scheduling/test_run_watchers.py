"""One change path: every writer of a Run (the store, the status writer, the scheduler's
PendingRun write) records its change through ``history``, and the Run kind's watchers see
each change there, once; the scheduler watches what it reads of a Run, not its own status
writes."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.machinery.registry import registry
from scheduling import run_status, triggers
from scheduling.models import Run
from scheduling.scheduler.snapshot import PendingRun
from tests.helpers.operator import OPERATOR
from tests.helpers.records import fresh, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard():
    """What a watcher added to the Run kind saw: (event, phase, phase_changed)."""
    seen: list[tuple[str, str, bool]] = []

    def listen(run, event):
        seen.append((event, run.phase, run.phase_changed))

    kind = registry.for_model(Run)
    watchers = kind.on_change
    registry.watch(Run, listen)
    registry.watch(Run, listen)  # once, however often asked
    yield seen
    kind.on_change = watchers


def scheduled(run) -> dict:
    return run_status.scheduled(run.status, "pod-a", "uid-a", timezone.now(), run.generation)


def test_a_watcher_sees_store_writes_and_status_writes_alike(heard):
    run = make_run("r")
    assert run_status.write(fresh(run), scheduled(run), run_status.BIND)
    kind = registry.for_model(Run)
    store.delete(kind, "default", "r", context=OPERATOR)
    # created, bound by the status writer, then marked deleted (its artifact finalizer holds it)
    assert heard == [
        ("ADDED", "Pending", False),
        ("MODIFIED", "Scheduled", True),
        ("MODIFIED", "Scheduled", False),
    ]


def test_the_scheduler_s_pending_run_write_announces_its_phase_change(heard):
    run = fresh(make_run("r"))
    pending = PendingRun(
        pk=run.pk,
        uid=str(run.uid),
        namespace=run.namespace,
        name=run.name,
        resource_version=run.resource_version,
        generation=run.generation,
        labels=dict(run.labels),
        runtime=run.runtime,
        requests={},
        fractional=[],
        affinity={},
        status=dict(run.status or {}),
        cancel_requested=False,
    )
    heard.clear()
    cancelled = run_status.finished(run.status, "Cancelled", "", "", timezone.now(), 1)
    assert run_status.write(pending, cancelled)
    assert heard == [("MODIFIED", "Cancelled", True)]


def test_a_phase_change_is_announced_once(heard):
    run = fresh(make_run("r"))
    heard.clear()
    assert run_status.write(run, scheduled(run), run_status.BIND)
    assert run_status.write(run, {**run.status, "message": "still scheduled"})
    assert heard == [("MODIFIED", "Scheduled", True), ("MODIFIED", "Scheduled", False)]


def test_the_scheduler_is_not_woken_by_its_own_pending_status_writes(monkeypatch):
    woken: list[str] = []
    monkeypatch.setattr(triggers, "request_scheduling", woken.append)
    run = fresh(make_run("r"))
    assert woken == ["run"]  # a new Run
    woken.clear()
    status = run_status.pending(run.status, "0/1 pods are available", timezone.now(), 1)
    assert run_status.write(run, status, run_status.STILL_PENDING)
    assert woken == []
    kind = registry.for_model(Run)
    store.patch(kind, "default", "r", {"metadata": {"labels": {"tier": "gold"}}}, context=OPERATOR)
    assert woken == ["run"]  # what the scheduler reads moved
