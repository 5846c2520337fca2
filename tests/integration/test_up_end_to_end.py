"""The product loop for real: ``manage.py up`` (web, control worker, beat, local Runtime Pods),
a Runtime and a Run created over HTTP, runtimed executing it, the report coming back."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.helpers.live import API, RUNTIME, phase, ready_pods, running_with, script_run
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_created_over_http_succeeds_on_a_local_runtime_pod(portal_up):
    session, base = portal_up
    assert session.post(f"{base}{API}/runtimes", json=RUNTIME, timeout=10).status_code == 201
    assert wait_until(lambda: ready_pods() == 2, timeout=60), "Runtime Pods never got ready"
    started = time.monotonic()
    created = session.post(f"{base}{API}/runs", json=script_run("hello", "echo hi"), timeout=10)
    assert created.status_code == 201, created.text
    assert wait_until(lambda: phase(session, base, "hello") == "Succeeded", timeout=30)
    latency = time.monotonic() - started
    run = session.get(f"{base}{API}/runs/hello", timeout=5).json()
    assert run["status"]["exitCode"] == 0
    assert run["status"]["assignedPod"] in ("bash-0", "bash-1")  # <runtime>-<ordinal>
    types = {c["type"]: c["status"] for c in run["status"]["conditions"]}
    assert types == {"Scheduled": "True", "Running": "False", "Completed": "True"}
    print(f"echo Run: created -> Succeeded in {latency:.2f}s")
    metrics = session.get(f"{base}/metrics", timeout=5).text
    assert "kruntimes_scheduler_results_total" in metrics


def test_a_failing_step_and_a_lost_pod(portal_up):
    from scheduling.models import RuntimePod

    session, base = portal_up
    session.post(f"{base}{API}/runtimes", json=RUNTIME, timeout=10)
    assert wait_until(lambda: ready_pods() == 2, timeout=60)
    session.post(f"{base}{API}/runs", json=script_run("fails", "exit 3"), timeout=10)
    marker = f"120.{os.getpid()}{time.monotonic_ns() % 10**6}"  # a unique sleep argument
    session.post(f"{base}{API}/runs", json=script_run("sleeps", f"sleep {marker}"), timeout=10)
    assert wait_until(lambda: phase(session, base, "fails") == "Failed", timeout=30)
    failed = session.get(f"{base}{API}/runs/fails", timeout=5).json()["status"]
    assert (failed["reason"], failed["exitCode"]) == ("RuntimeExecute", 3)
    assert wait_until(lambda: phase(session, base, "sleeps") == "Running", timeout=30)
    assert wait_until(lambda: running_with(f"sleep\0{marker}"), timeout=10)
    pod_name = session.get(f"{base}{API}/runs/sleeps", timeout=5).json()["status"]["assignedPod"]
    dead = RuntimePod.objects.get(name=pod_name)
    pid = dead.pid
    os.kill(pid, signal.SIGKILL)  # the pod dies mid-Run
    killed = time.monotonic()
    assert wait_until(lambda: phase(session, base, "sleeps") == "Failed", timeout=30)
    lost = session.get(f"{base}{API}/runs/sleeps", timeout=5).json()["status"]
    assert lost["reason"] in ("PodGone", "ExecutionLost")
    print(f"pod killed -> Run {lost['reason']} in {time.monotonic() - killed:.1f}s")
    # the step died with its pod: nothing of it is left running
    assert wait_until(lambda: not running_with(f"sleep\0{marker}"), timeout=10)
    # the supervisor brought the pod back as a new one: its name (an ordinal, as a
    # StatefulSet's), a new UID
    assert wait_until(
        lambda: ready_pods() == 2 and not RuntimePod.objects.filter(uid=dead.uid).exists(),
        timeout=60,
    )
    assert RuntimePod.objects.get(name=pod_name).uid != dead.uid
