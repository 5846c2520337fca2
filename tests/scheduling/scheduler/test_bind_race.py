"""Two schedulers racing on the suite's database (PostgreSQL in CI, SQLite by default): no Run
is bound twice, no pod goes over capacity."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connections
from django.utils import timezone

from scheduling.models import Run, RuntimePod
from scheduling.scheduler import PassOptions, default_framework, run_pass
from tests.helpers.records import make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def only_the_racing_passes(monkeypatch):
    # only the racing passes below may schedule: no event-triggered pass during setup
    monkeypatch.setattr("scheduling.triggers.request_scheduling", lambda source: None)
    from portal.models import Namespace

    Namespace.objects.get_or_create(name="default", defaults={"spec": {"finalizers": []}})


def _race(schedulers: int, options: PassOptions, monkeypatch) -> list:
    """Both schedulers snapshot the same state, then bind: every slot is contested."""
    from scheduling.scheduler import bind as binding

    barrier = threading.Barrier(schedulers)
    first_bind = threading.Barrier(schedulers)
    waited = threading.local()
    real_bind = binding.bind

    def bind_together(assignments, now, *ledger):
        if not getattr(waited, "done", False):
            waited.done = True
            first_bind.wait(timeout=10)
        return real_bind(assignments, now, *ledger)

    monkeypatch.setattr(binding, "bind", bind_together)
    results, errors = [], []

    def one():
        try:
            barrier.wait(timeout=10)
            results.append(run_pass(default_framework(), timezone.now(), options))
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one) for _ in range(schedulers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    monkeypatch.setattr(binding, "bind", real_bind)
    assert not errors, errors
    return results


@pytest.mark.parametrize("bind_batch", [1, 25])
def test_racing_schedulers_never_double_bind_or_overfill(bind_batch, monkeypatch):
    make_runtime()
    for i in range(4):
        make_pod(f"bash-{i}", runs=10)
    for i in range(100):
        make_run(f"r{i:03d}")
    results = _race(2, PassOptions(bind_batch=bind_batch), monkeypatch)
    assert sum(r.conflicts for r in results) > 0  # the race really happened
    bound = Run.objects.filter(phase="Scheduled")
    # safety: each bind counted by exactly one scheduler, no pod over capacity, live pods only
    assert sum(r.bound for r in results) == bound.count()
    per_pod = Counter(bound.values_list("assigned_pod", flat=True))
    assert max(per_pod.values()) <= 10
    uids = {str(p.uid) for p in RuntimePod.objects.all()}
    assert set(bound.values_list("assigned_pod_uid", flat=True)) <= uids
    # liveness: a released assumption is placed by the next pass; every slot used once
    run_pass(default_framework(), timezone.now())
    assert Counter(
        Run.objects.filter(phase="Scheduled").values_list("assigned_pod", flat=True)
    ) == {f"bash-{i}": 10 for i in range(4)}
    assert Run.objects.filter(phase="Pending").count() == 60
