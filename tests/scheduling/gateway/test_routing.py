"""Where an invocation goes: the ownership cache answers from memory (no database read per
invocation once warm), the watch hub keeps it current (a Run that leaves Ready is answered as
such without a restart), and a Run that cannot take invocations is told apart by phase."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db.backends.signals import connection_created

from scheduling.gateway.ownership import ownership
from scheduling.models import RuntimePod
from tests.helpers.function_runtime import start_function_server
from tests.helpers.runs import run_manifest

from .conftest import TEAM_A, FunctionRun, create_run, make_ready, set_status
from .test_invoke import assert_failure

pytestmark = pytest.mark.django_db(transaction=True)


def eventually(check, seconds: float = 10.0):
    """``check()``'s first truthy answer (the hub polls every 50 ms)."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


class Queries:
    """Counts the SQL statements of every thread but the watch hub's (it polls the history
    table whatever the gateway does)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, execute, sql, params, many, context):
        if threading.current_thread().name != "watch-hub":
            with self._lock:
                self.count += 1
        return execute(sql, params, many, context)


@contextmanager
def counting_queries() -> Iterator[Queries]:
    """Every connection opened meanwhile counts its statements (the gateway's worker threads
    open one for each database read and close it after)."""
    queries = Queries()

    def install(sender, connection, **kwargs) -> None:
        if queries not in connection.execute_wrappers:
            connection.execute_wrappers.append(queries)

    connection_created.connect(install)
    try:
        yield queries
    finally:
        connection_created.disconnect(install)


def test_no_database_read_per_invocation_once_warm(world):
    assert world.invoke().status_code == 200  # warm: token, decision, Run and pod read once
    with counting_queries() as queries:
        for _ in range(100):
            assert world.invoke().status_code == 200
        assert queries.count == 0
        ownership.clear()  # the count sees reads: a cold Run is read again
        assert world.invoke().status_code == 200
        assert queries.count > 0


def test_a_uid_of_another_run_is_404(world):
    wrong = FunctionRun(world.run.namespace, world.run.name, world.other.uid)
    body = assert_failure(world.invoke(wrong), 404, "NotFound")
    assert body["message"] == 'runs.kruntimes.io "fn" not found'
    assert_failure(world.invoke(FunctionRun(TEAM_A, "fn", "not-a-uid")), 404, "NotFound")


def test_a_task_run_is_no_function(world, admin_api):
    task = create_run(admin_api, TEAM_A, "task", run_manifest("task"))
    set_status(task, phase="Running", assignedPod=world.pod.name, assignedPodUID=str(world.pod.uid))
    body = assert_failure(
        world.invoke(FunctionRun(TEAM_A, "task", str(task.uid))), 400, "BadRequest"
    )
    assert "not a function Run" in body["message"]
    assert body["details"]["causes"][0]["field"] == "spec.mode.function"


@pytest.mark.parametrize("phase", ["Pending", "Scheduled", "Running"])
def test_a_run_not_ready_yet_is_503_with_retry_after(world, admin_api, phase):
    run = create_run(admin_api, TEAM_A, "starting")
    set_status(run, phase=phase)
    starting = FunctionRun(TEAM_A, "starting", str(run.uid))
    response = eventually(
        lambda: (r := world.invoke(starting)) and f"(phase {phase})" in r.text and r
    )
    body = assert_failure(response, 503, "ServiceUnavailable")
    assert f"(phase {phase})" in body["message"]
    assert response.headers["Retry-After"] == "1"


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "Timeout", "Cancelled"])
def test_a_finished_run_is_409_naming_its_phase(world, admin_api, phase):
    run = create_run(admin_api, TEAM_A, "done")
    set_status(run, phase=phase, completionTime="2026-01-01T00:00:00Z")
    done = FunctionRun(TEAM_A, "done", str(run.uid))
    # the hub may hand the create over before the finish (one poll apart)
    response = eventually(lambda: (r := world.invoke(done)).status_code == 409 and r)
    body = assert_failure(response, 409, "Conflict")
    assert f"(phase {phase})" in body["message"]
    assert "Retry-After" not in response.headers


def test_a_run_that_leaves_ready_is_answered_so_without_a_restart(world, admin_api):
    assert world.invoke().status_code == 200
    run = world.pod  # noqa: F841 - the pod stays; only the Run's phase moves
    from scheduling.models import Run

    row = Run.objects.get(namespace=TEAM_A, name="fn")
    set_status(row, phase="Running")  # e.g. re-registering after its pod was lost
    assert eventually(lambda: world.invoke().status_code == 503)
    set_status(row, phase="Failed", completionTime="2026-01-01T00:00:00Z")
    assert eventually(lambda: world.invoke().status_code == 409)


def test_a_run_ready_again_on_another_pod_is_invoked_there_with_its_new_fence(world):
    from scheduling.models import Run

    assert world.invoke().status_code == 200
    second = start_function_server()
    try:
        pod = RuntimePod.objects.create(
            namespace=TEAM_A,
            runtime="python",
            name="python-1",
            phase="Running",
            ready=True,
            dataplane_address=second.address,
        )
        make_ready(Run.objects.get(namespace=TEAM_A, name="fn"), pod, attempt=3)
        assert eventually(lambda: world.invoke().status_code == 200 and second.functions.received)
        metadata = second.functions.last().metadata
        assert metadata["x-kruntimes-attempt"] == "3"
        assert metadata["x-kruntimes-pod-uid"] == str(pod.uid)
    finally:
        second.stop()


def test_a_deleted_run_is_404_and_a_run_being_deleted_503(world, admin_api):
    assert world.invoke().status_code == 200
    from tests.helpers.runs import runs_url

    # the Run's finalizers keep it while being deleted
    assert admin_api.delete(f"{runs_url(TEAM_A)}/fn").status_code in (200, 202)
    response = eventually(lambda: (r := world.invoke()).status_code != 200 and r)
    body = assert_failure(response, 503, "ServiceUnavailable")
    assert "being deleted" in body["message"]


def test_a_run_created_after_a_404_is_invocable_without_waiting(world, admin_api):
    absent = FunctionRun(TEAM_A, "later", "00000000-0000-4000-8000-000000000000")
    assert_failure(world.invoke(absent), 404, "NotFound")
    run = make_ready(create_run(admin_api, TEAM_A, "later"), world.pod)
    assert eventually(lambda: world.invoke(run).status_code == 200, seconds=5)


def test_an_unreachable_owner_is_503_and_its_address_read_again(world):
    RuntimePod.objects.filter(pk=world.pod.pk).update(dataplane_address="unix:/nonexistent/dp.sock")
    ownership.clear()
    response = world.invoke()
    assert_failure(response, 503, "ServiceUnavailable")
    assert response.headers["Retry-After"] == "1"
    RuntimePod.objects.filter(pk=world.pod.pk).update(dataplane_address=world.server.address)
    assert world.invoke().status_code == 200  # the failed address was dropped, read again


def test_a_pod_without_a_dataplane_is_503(world):
    RuntimePod.objects.filter(pk=world.pod.pk).update(dataplane_address="")
    ownership.clear()
    body = assert_failure(world.invoke(), 503, "ServiceUnavailable")
    assert "serves no dataplane" in body["message"]


def test_not_found_from_the_pod_forgets_the_route(world):
    assert world.invoke().status_code == 200
    assert ownership.known(TEAM_A, "fn") is not None
    assert world.invoke(body=b"abort:NOT_FOUND:no such function").status_code == 404
    assert ownership.known(TEAM_A, "fn") is None
    assert world.invoke().status_code == 200
