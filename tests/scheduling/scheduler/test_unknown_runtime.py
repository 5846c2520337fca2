"""A Run for a Runtime that does not exist is accepted, says so while it waits, and is placed
as soon as the Runtime and its pods appear, without waiting for the beat."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.machinery import store
from scheduling import tasks
from scheduling.scheduler import default_framework, run_pass
from scheduling.scheduler.framework import Framework
from scheduling.scheduler.plugins import default_plugins
from tests.helpers.operator import OPERATOR
from tests.helpers.records import RUNTIMES, fresh, make_pod, make_run, make_runtime
from tests.helpers.snapshots import pod, run, snapshot

NOT_FOUND = 'Runtime "nope" not found in namespace "ci"'


def test_the_pending_message_names_a_runtime_that_does_not_exist():
    snap = snapshot([pod("a", namespace="ci")])
    snap.runtimes = {("ci", "bash")}
    decision = Framework(default_plugins()).schedule_one(run(runtime="nope", namespace="ci"), snap)
    assert (decision.pod, decision.message) == (None, NOT_FOUND)


def test_a_runtime_without_pods_still_counts_pods():
    snap = snapshot([])
    snap.runtimes = {("ci", "bash")}
    decision = Framework(default_plugins()).schedule_one(run(namespace="ci"), snap)
    assert decision.message == "0/0 pods: no Runtime Pods for this Runtime in this namespace"


def test_a_runtime_of_the_same_name_elsewhere_does_not_count():
    snap = snapshot([pod("a", runtime="nope", namespace="other")])
    snap.runtimes = {("other", "nope")}
    decision = Framework(default_plugins()).schedule_one(run(runtime="nope", namespace="ci"), snap)
    assert decision.message == NOT_FOUND


@pytest.mark.django_db
def test_a_pass_writes_the_not_found_message():
    from portal.models import Namespace

    Namespace.objects.create(name="ci", spec={"finalizers": []})
    created = make_run("r1", runtime="nope", namespace="ci")
    run_pass(default_framework(), timezone.now())
    waiting = fresh(created)
    assert (waiting.phase, waiting.status["message"]) == ("Pending", NOT_FOUND)
    scheduled = next(c for c in waiting.status["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "Unschedulable",
        NOT_FOUND,
    )


@pytest.mark.django_db
def test_creating_the_runtime_schedules_its_waiting_runs_at_once(
    django_capture_on_commit_callbacks, monkeypatch
):
    from scheduling import dispatch

    monkeypatch.setattr(dispatch, "dispatch", lambda pks, now, app=None: None)
    with django_capture_on_commit_callbacks(execute=True):
        waiting = make_run("r1", runtime="late")
    assert fresh(waiting).status["message"] == 'Runtime "late" not found in namespace "default"'
    # the Runtime's creation wakes the scheduler (eager here): the message follows at once
    with django_capture_on_commit_callbacks(execute=True):
        make_runtime("late")
    assert fresh(waiting).status["message"].startswith("0/0 pods")
    # its first pod's first heartbeat places the Run, still without a beat
    pod_row = make_pod("late-0", runtime="late", ready=False)
    with django_capture_on_commit_callbacks(execute=True):
        tasks.runtime_pod_heartbeat(
            {
                "namespace": "default",
                "podName": "late-0",
                "podUID": str(pod_row.uid),
                "runtime": "late",
                "time": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                "activeRuns": [],
            }
        )
    bound = fresh(waiting)
    assert (bound.phase, bound.assigned_pod) == ("Scheduled", "late-0")


@pytest.mark.django_db
def test_deleting_the_runtime_tells_its_waiting_runs(django_capture_on_commit_callbacks):
    make_runtime("gone")
    with django_capture_on_commit_callbacks(execute=True):
        waiting = make_run("r1", runtime="gone")
    assert fresh(waiting).status["message"].startswith("0/0 pods")
    with django_capture_on_commit_callbacks(execute=True):
        store.delete(RUNTIMES, "default", "gone", context=OPERATOR)
    assert fresh(waiting).status["message"] == 'Runtime "gone" not found in namespace "default"'
