"""The control plane with real processes: a worker consuming the ``control`` queue, and beat's
DatabaseScheduler healing work whose event was lost, on both brokers."""

from __future__ import annotations

import os
import signal

import pytest
from celery import Celery
from django.utils import timezone

from portal.machinery import gc_queue, store
from portal.machinery.registry import registry
from portal.models import WorkItem
from tests.helpers.operator import OPERATOR
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _owner_with_child():
    gadgets = registry.get("testing.kruntimes.io", "v1", "gadgets")
    widgets = registry.get("testing.kruntimes.io", "v1", "widgets")
    owner = store.create(
        gadgets, {"metadata": {"name": "owner"}, "spec": {"size": 1}}, context=OPERATOR
    )
    ref = {
        "apiVersion": "testing.kruntimes.io/v1",
        "kind": "Gadget",
        "name": "owner",
        "uid": str(owner.uid),
    }
    store.create(
        widgets,
        {"metadata": {"name": "child", "ownerReferences": [ref]}, "spec": {"size": 1}},
        namespace="default",
        context=OPERATOR,
    )
    return gadgets, widgets, owner


def _child_gone(widgets) -> bool:
    return not widgets.model.objects.filter(name="child").exists()


def test_worker_runs_a_control_task_sent_through_the_broker(processes):
    gadgets, widgets, owner = _owner_with_child()
    gadgets.model.objects.filter(pk=owner.pk).delete()  # the owner vanished, no event sent
    # its key waits in the gc queue (as beat's resync leaves it), its drain sent below
    WorkItem.objects.create(queue=gc_queue.QUEUE, key=str(owner.uid), due_at=timezone.now())
    processes.worker()
    url = processes.env["CELERY_BROKER_URL"]
    sender = Celery("sender", broker=url)
    sender.conf.broker_transport_options = _transport_options(processes.env)
    # an explicit URL: Celery would otherwise prefer $CELERY_BROKER_URL of this process
    with sender.connection_for_write(url) as conn:
        sender.send_task(
            "portal.tasks.process_queue",
            args=[gc_queue.QUEUE],
            queue="control",
            connection=conn,
        )
    assert wait_until(lambda: _child_gone(widgets)), "the worker never collected the child"


def test_beat_heals_a_lost_event(processes, tmp_path):
    gadgets, widgets, owner = _owner_with_child()
    gadgets.model.objects.filter(pk=owner.pk).delete()  # as if the delete's event was lost
    processes.worker()
    processes.beat(tmp_path)
    assert wait_until(lambda: _child_gone(widgets), timeout=40), (
        "beat's garbage-collect pass never ran"
    )


def test_a_killed_worker_loses_nothing_beat_repeats_the_work(processes, tmp_path):
    gadgets, widgets, owner = _owner_with_child()
    gadgets.model.objects.filter(pk=owner.pk).delete()
    doomed = processes.worker()
    os.killpg(doomed.pid, signal.SIGKILL)  # killed before (or while) doing anything
    doomed.wait()
    processes.worker()
    processes.beat(tmp_path)
    assert wait_until(lambda: _child_gone(widgets), timeout=40)


def _transport_options(env: dict[str, str]) -> dict:
    if not env["CELERY_BROKER_URL"].startswith("filesystem://"):
        return {}
    from pathlib import Path

    broker = Path(env["KRUNTIMES_DATA_DIR"]) / "broker"
    for sub in ("queue", "processed", "control"):
        (broker / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(broker / "queue"),
        "data_folder_out": str(broker / "queue"),
        "control_folder": str(broker / "control"),
        "store_processed": False,
    }
