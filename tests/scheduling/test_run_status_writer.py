"""The Run kind's one status writer (``scheduling.run_status``): the compare-and-set every
controller uses, its batch form, and that no other module writes a Run's status."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from scheduling import run_status
from scheduling.models import Run
from tests.helpers.records import fresh, make_run
from tests.helpers.source import method_calls

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def scheduled(run) -> dict:
    return run_status.scheduled(run.status, "pod-a", "uid-a", timezone.now(), run.generation)


def test_write_lands_at_the_version_read_and_keeps_columns_and_object_in_step():
    run = make_run("r")
    seen = run.resource_version
    assert run_status.write(run, scheduled(run), run_status.BIND)
    row = fresh(run)
    assert (row.phase, row.assigned_pod, row.assigned_pod_uid) == ("Scheduled", "pod-a", "uid-a")
    assert row.resource_version == run.resource_version > seen
    assert run.phase == "Scheduled" and run.status == row.status


def test_a_stale_write_loses_and_changes_nothing():
    run = make_run("r")
    Run.objects.filter(pk=run.pk).update(resource_version=run.resource_version + 5)
    assert not run_status.write(run, scheduled(run))
    assert fresh(run).phase == "Pending"


@pytest.mark.parametrize(
    "change, guard, lands",
    [
        ({"phase": "Cancelled"}, run_status.STILL_PENDING, False),
        ({"phase": "Cancelled"}, run_status.ANY, True),
        ({"deletion_timestamp": timezone.now()}, run_status.BIND, False),
        ({"deletion_timestamp": timezone.now()}, run_status.STILL_PENDING, True),
    ],
)
def test_guards_hold_alike_for_one_write_and_a_batch(change, guard, lands):
    one, batch = make_run("one"), make_run("batch")
    Run.objects.filter(pk__in=[one.pk, batch.pk]).update(**change)
    one, batch = fresh(one), fresh(batch)
    assert run_status.write(one, scheduled(one), guard) is lands
    assert (run_status.write_many([(batch, scheduled(batch))], guard) == {batch.pk}) is lands


def test_bind_resets_dispatched_at_in_both_forms():
    one, batch = make_run("one"), make_run("batch")
    Run.objects.filter(pk__in=[one.pk, batch.pk]).update(dispatched_at=timezone.now())
    one, batch = fresh(one), fresh(batch)
    seen = (one.resource_version, batch.resource_version)
    assert run_status.write(one, scheduled(one), run_status.BIND)
    assert run_status.write_many([(batch, scheduled(batch))], run_status.BIND) == {batch.pk}
    assert fresh(one).dispatched_at is None and fresh(batch).dispatched_at is None
    assert fresh(one).resource_version > seen[0] and fresh(batch).resource_version > seen[1]


def _version_writes(path: Path) -> list[int]:
    """Lines of ``.update(...)`` calls that set ``resource_version``: compare-and-set writes."""
    return method_calls(
        path,
        lambda call, method: (
            method.attr == "update" and any(k.arg == "resource_version" for k in call.keywords)
        ),
    )


def test_no_module_but_the_status_writers_compare_and_sets_a_row():
    """Run status: run_status; Runtime status: runtime_status; PersistentWorkspace status:
    workspaces.status; WorkflowRun status: workflows.status; objects: the store; the one
    compare-and-set they share: portal.machinery.history."""
    owners = {
        "scheduling/run_status.py",
        "scheduling/runtime_status.py",
        "workspaces/status.py",
        "workflows/status.py",
        "jobclasses/status.py",
        "portal/machinery/store.py",
        "portal/machinery/history.py",
    }
    found = {}
    for package in ("portal", "scheduling", "workspaces", "workflows", "jobclasses"):
        for path in (ROOT / package).rglob("*.py"):
            relative = str(path.relative_to(ROOT))
            if relative not in owners and _version_writes(path):
                found[relative] = _version_writes(path)
    assert found == {}
    assert _version_writes(ROOT / "scheduling/run_status.py")  # the scan does find them
