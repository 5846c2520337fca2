"""Run garbage collection: ttlSecondsAfterFinished and the kruntimes.io/artifact-cleanup
finalizer, in batches that resume."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.machinery import store
from portal.models import Event
from runtimed.stores import RunScope, StoreError
from runtimed.stores.filesystem import FilesystemStore
from scheduling import cleanup, lifecycle
from scheduling.models import Run
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNS, fresh, make_pod, make_run, make_runtime, report

pytestmark = pytest.mark.django_db

STORE = {"driver": "filesystem", "filesystem": {"volumeClaimName": "artifacts"}}


@pytest.fixture
def volumes(settings, tmp_path):
    settings.KRUNTIMES_ARTIFACT_VOLUMES = tmp_path / "volumes"
    return tmp_path / "volumes"


def finished(name: str, now, *, phase: str = "Succeeded", **spec) -> Run:
    """A Run bound, run and ended through reports, with its store snapshot recorded."""
    from scheduling.scheduler import default_framework, run_pass

    run = make_run(name, **spec)
    run_pass(default_framework(), now)
    run = fresh(run)
    pod = type("Pod", (), {"name": run.assigned_pod, "uid": run.assigned_pod_uid})
    lifecycle.apply_report(report(run, pod, "Running", artifactStore=STORE), now)
    lifecycle.apply_report(report(run, pod, phase, artifactStore=STORE, completionTime=None), now)
    return fresh(run)


@pytest.fixture
def runtime():
    make_runtime(artifactStore=STORE)
    make_pod("bash-a", runs=100)


def test_every_new_run_carries_the_artifact_cleanup_finalizer():
    run = make_run("r1")
    assert run.finalizers == [cleanup.ARTIFACT_CLEANUP]
    other = store.create(
        RUNS,
        {
            "apiVersion": "kruntimes.io/v1alpha1",
            "kind": "Run",
            "metadata": {"name": "r2", "finalizers": ["example.com/x"]},
            "spec": {"runtime": "bash", "source": {"inline": "true"}, "mode": {"task": {}}},
        },
        namespace="default",
        context=OPERATOR,
    )
    assert other.finalizers == ["example.com/x", cleanup.ARTIFACT_CLEANUP]


def test_ttl_deletes_finished_runs_only_once_it_has_passed(runtime, volumes):
    now = timezone.now()
    run = finished("r1", now, ttlSecondsAfterFinished=60)
    keep = finished("r2", now)  # no TTL: kept forever
    assert cleanup.expire_finished(now + timedelta(seconds=59), 100).expired == 0
    assert cleanup.expire_finished(now + timedelta(seconds=61), 100).expired == 1
    assert fresh(run).deletion_timestamp is not None  # the finalizer holds it for cleanup
    assert fresh(keep).deletion_timestamp is None
    assert cleanup.release_deleted(100).cleaned == 1
    assert not Run.objects.filter(pk=run.pk).exists()


def test_ttl_counts_from_completion_and_stays_mutable(runtime, volumes):
    now = timezone.now()
    run = finished("r1", now)
    store.patch(RUNS, "default", "r1", {"spec": {"ttlSecondsAfterFinished": 0}}, context=OPERATOR)
    assert cleanup.expire_finished(now + timedelta(seconds=1), 100).expired == 1
    assert fresh(run).deletion_timestamp is not None


def test_active_runs_are_never_expired(runtime, volumes):
    now = timezone.now()
    make_run("pending", ttlSecondsAfterFinished=0)
    assert cleanup.expire_finished(now + timedelta(days=1), 100).expired == 0


def test_ttl_pass_is_batched_and_resumes(runtime, volumes):
    now = timezone.now()
    runs = [finished(f"r{i}", now, ttlSecondsAfterFinished=0) for i in range(5)]
    first = cleanup.expire_finished(now + timedelta(seconds=1), 2)
    assert first.expired == 2 and first.resume_after == runs[1].pk
    second = cleanup.expire_finished(now + timedelta(seconds=1), 2, first.resume_after)
    assert second.expired == 2 and second.resume_after == runs[3].pk
    last = cleanup.expire_finished(now + timedelta(seconds=1), 2, second.resume_after)
    assert last.expired == 1 and last.resume_after is None


def put_artifact(volumes, run: Run, name: str = "dist.tgz", data: bytes = b"x") -> None:
    (volumes / "artifacts").mkdir(parents=True, exist_ok=True)
    fs = FilesystemStore(volumes / "artifacts", "artifacts")
    fs.put(
        RunScope(run.namespace, str(run.uid)), name, io.BytesIO(data), len(data), "application/gzip"
    )


def test_deleting_a_run_removes_its_artifacts_before_the_row(runtime, volumes):
    now = timezone.now()
    run, other = finished("r1", now), finished("r2", now)
    put_artifact(volumes, run)
    put_artifact(volumes, run, "report.xml")
    put_artifact(volumes, other)
    _, gone = store.delete(RUNS, "default", "r1", context=OPERATOR)
    assert not gone and fresh(run).deletion_timestamp is not None
    run_dir = volumes / "artifacts" / "namespaces" / "default" / "runs" / str(run.uid)
    assert run_dir.exists()
    assert cleanup.release_deleted(100).cleaned == 1
    assert not run_dir.exists()
    assert not Run.objects.filter(pk=run.pk).exists()
    other_dir = volumes / "artifacts" / "namespaces" / "default" / "runs" / str(other.uid)
    assert (other_dir / "dist.tgz").read_bytes() == b"x"


def test_a_run_that_never_ran_is_released_without_a_store(runtime, volumes):
    run = make_run("never", runtime="missing")
    store.delete(RUNS, "default", "never", context=OPERATOR)
    assert cleanup.release_deleted(100).cleaned == 1
    assert not Run.objects.filter(pk=run.pk).exists()


def test_a_run_deleted_while_it_executes_waits_until_it_has_ended(runtime, volumes):
    from scheduling.scheduler import default_framework, run_pass

    run = make_run("busy")
    run_pass(default_framework(), timezone.now())
    store.delete(RUNS, "default", "busy", context=OPERATOR)
    progress = cleanup.release_deleted(100)
    assert (progress.waiting, progress.cleaned) == (1, 0)
    assert Run.objects.filter(pk=run.pk).exists()
    run = fresh(run)
    pod = type("Pod", (), {"name": run.assigned_pod, "uid": run.assigned_pod_uid})
    lifecycle.apply_report(report(run, pod, "Cancelled", reason="Cancelled"), timezone.now())
    assert cleanup.release_deleted(100).cleaned == 1
    assert not Run.objects.filter(pk=run.pk).exists()


def test_a_store_failure_keeps_the_finalizer_for_the_next_pass(runtime, volumes):
    run = finished("r1", timezone.now())
    store.delete(RUNS, "default", "r1", context=OPERATOR)
    calls = []

    def broken(spec, **options):
        calls.append(spec)
        raise StoreError('S3 bucket "b" does not exist')

    progress = cleanup.release_deleted(100, store_factory=broken)
    assert (progress.failed, progress.cleaned) == (1, 0) and calls == [STORE]
    assert fresh(run).finalizers == [cleanup.ARTIFACT_CLEANUP]
    event = Event.objects.get(involved_uid=str(run.uid), reason="ArtifactCleanupFailed")
    assert event.type == "Warning" and 'bucket "b"' not in event.message
    assert cleanup.release_deleted(100).cleaned == 1  # the store is back
    assert not Run.objects.filter(pk=run.pk).exists()


def test_other_finalizers_keep_the_run_after_artifact_cleanup(runtime, volumes):
    run = finished("r1", timezone.now())
    store.patch(
        RUNS,
        "default",
        "r1",
        {"metadata": {"finalizers": [cleanup.ARTIFACT_CLEANUP, "example.com/hold"]}},
        context=OPERATOR,
    )
    store.delete(RUNS, "default", "r1", context=OPERATOR)
    assert cleanup.release_deleted(100).cleaned == 1
    assert fresh(run).finalizers == ["example.com/hold"]


def test_release_pass_is_batched_and_resumes(runtime, volumes):
    now = timezone.now()
    runs = [finished(f"r{i}", now) for i in range(3)]
    for run in runs:
        store.delete(RUNS, "default", run.name, context=OPERATOR)
    first = cleanup.release_deleted(2)
    assert first.cleaned == 2 and first.resume_after == runs[1].pk
    last = cleanup.release_deleted(2, first.resume_after)
    assert last.cleaned == 1 and last.resume_after is None
    assert not Run.objects.filter(pk__in=[r.pk for r in runs]).exists()


def test_the_collect_runs_task_reports_both_halves(runtime, volumes, settings):
    from scheduling.tasks import collect_runs

    settings.KRUNTIMES_GC_BATCH_SIZE = 100
    now = timezone.now() - timedelta(minutes=5)
    finished("old", now, ttlSecondsAfterFinished=1)
    # one pass: the TTL deletes it, then the finalizer half releases it
    assert collect_runs() == {"expired": 1, "cleaned": 1, "waiting": 0, "failed": 0}
    assert collect_runs() == {"expired": 0, "cleaned": 0, "waiting": 0, "failed": 0}
    assert not Run.objects.filter(name="old").exists()


def test_a_run_deleted_while_it_ran_is_cleaned_up_as_soon_as_it_ends(runtime, volumes, monkeypatch):
    from scheduling import triggers
    from scheduling.scheduler import default_framework, run_pass

    requested = []
    monkeypatch.setattr(triggers, "request_cleanup", lambda run: requested.append(True))
    run = make_run("busy")
    run_pass(default_framework(), timezone.now())
    store.delete(RUNS, "default", "busy", context=OPERATOR)
    assert requested == [True]  # the delete itself asks for a pass
    run = fresh(run)
    pod = type("Pod", (), {"name": run.assigned_pod, "uid": run.assigned_pod_uid})
    lifecycle.apply_report(report(run, pod, "Cancelled", reason="Cancelled"), timezone.now())
    assert requested == [True, True]  # and so does its end


def test_a_deleted_run_s_key_is_released_by_the_cleanup_queue(runtime, volumes):
    from portal.machinery import workqueue
    from portal.models import WorkItem
    from scheduling import tasks, triggers

    run = finished("r1", timezone.now())
    put_artifact(volumes, run)
    store.delete(RUNS, "default", "r1", context=OPERATOR)
    assert list(
        WorkItem.objects.filter(queue=triggers.CLEANUP_QUEUE).values_list("key", flat=True)
    ) == ["default/r1"]
    drained = workqueue.process(triggers.CLEANUP_QUEUE)
    assert drained.reconciled == ["default/r1"]
    assert not Run.objects.filter(pk=run.pk).exists()
    assert tasks.clean_up_run("default/r1") is None  # gone: nothing to do


def test_a_store_failure_in_the_cleanup_queue_is_retried_after_its_backoff(
    runtime, volumes, monkeypatch
):
    from portal.machinery import workqueue
    from portal.models import WorkItem
    from scheduling import triggers

    def broken(run, store_factory=None):
        raise StoreError('S3 bucket "b" does not exist')

    monkeypatch.setattr(cleanup, "delete_artifacts", broken)
    run = finished("r1", timezone.now())
    store.delete(RUNS, "default", "r1", context=OPERATOR)
    drained = workqueue.process(triggers.CLEANUP_QUEUE)
    assert drained.failed == ["default/r1"] and drained.retry_in == workqueue.backoff(1)
    assert WorkItem.objects.get(queue=triggers.CLEANUP_QUEUE).failures == 1
    assert fresh(run).finalizers == [cleanup.ARTIFACT_CLEANUP]


def test_a_deleted_run_still_executing_waits_and_its_end_adds_it_again(runtime, volumes):
    from portal.machinery import workqueue
    from portal.models import WorkItem
    from scheduling import triggers
    from scheduling.scheduler import default_framework, run_pass

    run = make_run("busy")
    run_pass(default_framework(), timezone.now())
    store.delete(RUNS, "default", "busy", context=OPERATOR)
    assert workqueue.process(triggers.CLEANUP_QUEUE).reconciled == ["default/busy"]
    assert not WorkItem.objects.filter(queue=triggers.CLEANUP_QUEUE).exists()
    run = fresh(run)
    pod = type("Pod", (), {"name": run.assigned_pod, "uid": run.assigned_pod_uid})
    lifecycle.apply_report(report(run, pod, "Cancelled", reason="Cancelled"), timezone.now())
    assert WorkItem.objects.filter(queue=triggers.CLEANUP_QUEUE, key="default/busy").exists()
    workqueue.process(triggers.CLEANUP_QUEUE)
    assert not Run.objects.filter(pk=run.pk).exists()
