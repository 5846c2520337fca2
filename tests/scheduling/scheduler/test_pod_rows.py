"""The pass's pod read parses text columns back to what the model holds (either database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduling.models import RuntimePod
from scheduling.scheduler.pod_rows import read_pods

pytestmark = pytest.mark.django_db


def test_pods_read_as_text_equal_the_model_values():
    beat = datetime(2026, 12, 1, 10, 11, 12, 345678, tzinfo=UTC)
    made = [
        RuntimePod.objects.create(
            namespace="team-a",
            runtime="rt",
            name="rt-0",
            ready=True,
            phase="Running",
            last_heartbeat=beat,
            capacity={"runs": 4, "cpu": 2000},
        ),
        RuntimePod.objects.create(
            namespace="team-b", runtime="rt", name="rt-1", ready=False, last_heartbeat=None
        ),
        RuntimePod.objects.create(
            namespace="team-b",
            runtime="rt",
            name="rt-2",
            ready=True,
            last_heartbeat=beat.replace(microsecond=0),
            capacity={},
        ),
    ]
    by_pk = {pod.pk: pod for pod in read_pods(RuntimePod.objects.all())}
    for row in made:
        row.refresh_from_db()
        pod = by_pk[row.pk]
        assert (pod.namespace, pod.runtime, pod.name) == (row.namespace, row.runtime, row.name)
        assert pod.uid == str(row.uid)
        assert (pod.ready, pod.phase) == (row.ready, row.phase)
        assert pod.last_heartbeat == row.last_heartbeat
        assert pod.capacity == row.capacity
    # each pod its own capacity dict: a pass that edits one does not edit the others or the cache
    first = by_pk[made[0].pk]
    first.capacity["runs"] = 0
    assert {p.pk: p.capacity for p in read_pods(RuntimePod.objects.all())}[made[0].pk] == {
        "runs": 4,
        "cpu": 2000,
    }
