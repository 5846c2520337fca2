"""What wakes the workflow controller: each event puts the WorkflowRun's UID on its work queue,
where repeated wake-ups wait as one key; beat's pass puts every unfinished WorkflowRun there."""

from __future__ import annotations

import pytest

from portal.models import WorkItem
from scheduling import run_status
from scheduling.models import Run
from tests.helpers.records import make_runtime
from tests.workflows.test_controller import job, start, step, tick
from workflows import tasks
from workflows.names import child_name
from workflows.triggers import QUEUE

pytestmark = pytest.mark.django_db


def queued() -> list[str]:
    return sorted(WorkItem.objects.filter(queue=QUEUE).values_list("key", flat=True))


@pytest.fixture(autouse=True)
def runtime():
    make_runtime()


def test_a_new_workflow_run_is_queued_once_however_often_it_is_woken():
    wfr = start({"build": job(step("a"))})
    for _ in range(3):
        tasks.reconcile()  # beat's resync adds it again: still one key
    assert queued() == [str(wfr.uid)]


def test_a_child_runs_phase_change_queues_its_workflow_run():
    wfr = tick(start({"build": job(step("a"))}))
    WorkItem.objects.all().delete()
    run = Run.objects.get(name=child_name(wfr.name, "build", "a"))
    assert run_status.write(run, {**run.status, "phase": "Succeeded"}, run_status.ANY)
    assert queued() == [str(wfr.uid)]


def test_the_queue_handler_reconciles_the_workflow_run_of_the_key():
    wfr = start({"build": job(step("a"))})
    assert tasks.reconcile_key(str(wfr.uid)) is True
    assert Run.objects.filter(name=child_name(wfr.name, "build", "a")).exists()
    assert tasks.reconcile_key("00000000-0000-0000-0000-000000000000") is False  # gone: done


def test_a_finished_workflow_run_is_not_resynced():
    wfr = start({"build": job(step("a"))})
    WorkItem.objects.all().delete()
    type(wfr).objects.filter(pk=wfr.pk).update(phase="Succeeded")
    assert tasks.reconcile() == 0
    assert queued() == []


def test_the_controller_s_own_status_write_does_not_wake_it_again():
    wfr = start({"build": job(step("a"))})
    WorkItem.objects.all().delete()
    assert tasks.reconcile_key(str(wfr.uid)) is True  # it created the child and wrote status
    assert queued() == []


def test_a_cancel_wakes_the_workflow_run():
    from portal.machinery import store
    from portal.machinery.registry import registry
    from tests.helpers.operator import OPERATOR

    wfr = tick(start({"build": job(step("a"))}))
    WorkItem.objects.all().delete()
    kind = registry.for_model(type(wfr))
    store.patch(
        kind, wfr.namespace, wfr.name, {"spec": {"cancelRequested": True}}, context=OPERATOR
    )
    assert queued() == [str(wfr.uid)]
