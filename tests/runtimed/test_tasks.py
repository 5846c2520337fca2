"""The execute_run task: reports, idempotency per (uid, attempt), failures, pod fencing."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

import runtimed.execute
from runtimed.tasks import ActiveRuns, RunService
from tests.helpers.payloads import make_payload


@pytest.fixture
def service(config, reporter, clock) -> RunService:
    return RunService(config, reporter, clock=clock, grace=1.0)


def run_dir(config, uid="run-uid-1"):
    return config.workspace / ".kruntimes" / "runs" / uid


def test_running_then_succeeded(service, reporter, config):
    counter = config.workspace / "count"
    payload = make_payload(
        f'echo "$GREETING $1" >> {counter}',
        env=[{"name": "GREETING", "value": "hello"}],
        mode={"task": {"args": ["world"]}},
        futureField=[{"ignored": True}],
    )
    final = service.execute_run(payload)
    running, done = reporter.reports
    assert running == {
        "namespace": "ci",
        "name": "build",
        "uid": "run-uid-1",
        "attempt": 1,
        "podName": "pod-a",
        "podUID": "uid-pod-a",
        "phase": "Running",
        "reason": "",
        "message": "",
        "exitCode": None,
        "startTime": "2026-01-02T03:04:05Z",
        "completionTime": None,
    }
    assert done == final
    assert (done["phase"], done["reason"], done["exitCode"]) == ("Succeeded", "", 0)
    assert done["startTime"] == "2026-01-02T03:04:05Z"
    assert done["completionTime"] > done["startTime"]
    assert counter.read_text() == "hello world\n"
    directory = run_dir(config)
    assert (directory / "attempt-1.started").exists()
    assert json.loads((directory / "attempt-1.result.json").read_text()) == done
    assert (directory / "attempt-1.log").exists()
    assert service.active.snapshot() == []


def test_same_payload_twice_executes_once_and_resends_the_report(service, reporter, config):
    counter = config.workspace / "count"
    payload = make_payload(f"echo ran >> {counter}; exit 3")
    first = service.execute_run(payload)
    assert first["phase"] == "Failed" and first["reason"] == "RuntimeExecute"
    assert "exit code 3" in first["message"] and first["exitCode"] == 3
    second = service.execute_run(payload)
    assert counter.read_text() == "ran\n"  # executed once
    assert second == first
    assert [r["phase"] for r in reporter.reports] == ["Running", "Failed", "Failed"]
    assert reporter.reports[2] == first  # the recorded final report, re-sent


def test_a_new_attempt_executes_again(service, reporter, config):
    counter = config.workspace / "count"
    service.execute_run(make_payload(f"echo $KRUNTIME_ATTEMPT >> {counter}", attempt=1))
    service.execute_run(make_payload(f"echo $KRUNTIME_ATTEMPT >> {counter}", attempt=2))
    assert counter.read_text() == "1\n2\n"


def test_duplicate_while_running_does_not_execute(service, reporter, config):
    gate = config.workspace / "gate"
    counter = config.workspace / "count"
    payload = make_payload(f"echo ran >> {counter}; while [ ! -e {gate} ]; do sleep 0.02; done")
    first = threading.Thread(target=service.execute_run, args=(payload,))
    first.start()
    try:
        for _ in range(250):
            if service.active.snapshot() and reporter.reports:
                break
            threading.Event().wait(0.02)
        assert service.active.snapshot() == [{"uid": "run-uid-1", "attempt": 1}]
        assert service.execute_run(payload) is None  # the duplicate: nothing done
        assert [r["phase"] for r in reporter.reports] == ["Running"]
    finally:
        gate.touch()
        first.join(10)
    assert [r["phase"] for r in reporter.reports] == ["Running", "Succeeded"]
    assert counter.read_text() == "ran\n"


def test_started_but_never_finished_is_not_run_again(service, reporter, config):
    directory = run_dir(config)
    directory.mkdir(parents=True)
    (directory / "attempt-1.started").write_text("4242\n")  # a runtimed that died mid-Run
    assert service.execute_run(make_payload("exit 0")) is None
    assert reporter.reports == []


def test_staging_failure_is_prepare_source(service, reporter, config):
    payload = make_payload(
        source={"repoURL": str(config.workspace / "missing-repo")},
        mode={"task": {"entrypoint": "run.sh", "args": []}},
    )
    final = service.execute_run(payload)
    assert [r["phase"] for r in reporter.reports] == ["Running", "Failed"]
    assert final["reason"] == "PrepareSource" and "git clone failed" in final["message"]
    assert final["exitCode"] is None and final["completionTime"] is not None


def test_working_dir_escape_is_prepare_source(service):
    final = service.execute_run(make_payload(workingDir="../../elsewhere"))
    assert final["reason"] == "PrepareSource" and "workingDir" in final["message"]


def test_working_dir_is_relative_to_the_workspace(service, config):
    out = config.workspace / "pwd.txt"
    final = service.execute_run(make_payload(f"pwd > {out}", workingDir="build"))
    assert final["phase"] == "Succeeded"
    assert out.read_text().strip() == str(config.workspace / "build")


def test_timeout_is_reported(service):
    final = service.execute_run(make_payload("sleep 30", timeoutSeconds=0.3))
    assert (final["phase"], final["reason"], final["exitCode"]) == ("Timeout", "Timeout", None)


def test_unexpected_exception_is_runtime_error(service, reporter, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runtimed.execute, "run_step", explode)
    final = service.execute_run(make_payload())
    assert [r["phase"] for r in reporter.reports] == ["Running", "Failed"]
    assert final["reason"] == "RuntimeError" and "disk on fire" in final["message"]
    assert service.active.snapshot() == []


def test_a_spec_runtimed_cannot_execute_is_prepare_source(service):
    final = service.execute_run(make_payload(env="not-a-list"))
    assert final["reason"] == "PrepareSource" and "env" in final["message"]


@pytest.mark.parametrize(
    "repo", ["missing-repo", "file:///nonexistent/repo.git", "https://127.0.0.1:1/unreachable.git"]
)
def test_a_source_that_cannot_be_fetched_is_prepare_source_in_one_line(service, config, repo):
    url = str(config.workspace / repo) if "/" not in repo else repo
    final = service.execute_run(
        make_payload(source={"repoURL": url}, mode={"task": {"entrypoint": "run.sh", "args": []}})
    )
    assert (final["phase"], final["reason"]) == ("Failed", "PrepareSource")
    assert final["message"].startswith("git clone failed")
    assert "\n" not in final["message"] and "Traceback" not in final["message"]


def test_a_missing_entrypoint_is_prepare_source(service, config, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (
        ["init", "-q"],
        [
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "empty",
        ],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    final = service.execute_run(
        make_payload(
            source={"repoURL": str(repo)}, mode={"task": {"entrypoint": "ci/run.sh", "args": []}}
        )
    )
    assert (final["reason"], final["message"]) == (
        "PrepareSource",
        "entrypoint 'ci/run.sh' does not exist in the checkout",
    )


def test_an_unexpected_failure_is_one_line_without_a_traceback(service, monkeypatch, caplog):
    def explode(*args, **kwargs):
        raise OSError("first line\nTraceback (most recent call last):\n  File x\nsecond")

    monkeypatch.setattr(runtimed.execute, "run_step", explode)
    final = service.execute_run(make_payload())
    assert final["reason"] == "RuntimeError"
    assert final["message"] == (
        "runtimed failed: OSError: first line; Traceback (most recent call last):; File x; second"
    )
    assert "\n" not in final["message"]
    # the real traceback is in runtimed's own log
    assert any(record.exc_info for record in caplog.records)


def test_function_mode_is_not_executed(service):
    final = service.execute_run(make_payload(mode={"function": {"handler": "m.f"}}))
    assert final["reason"] == "PrepareSource" and "function" in final["message"]


def test_long_messages_are_truncated(service, monkeypatch):
    def long_failure(step, **kwargs):
        return runtimed.execute.Result(
            "Failed", "RuntimeExecute", "x" * 10000, 1, kwargs["clock"](), kwargs["clock"]()
        )

    monkeypatch.setattr(runtimed.execute, "run_step", long_failure)
    final = service.execute_run(make_payload())
    assert len(final["message"]) == 4096


def test_dispatch_for_another_pod_incarnation_is_ignored(service, reporter):
    assert service.execute_run(make_payload(pod=("pod-a", "an-older-uid"))) is None
    assert reporter.reports == []


@pytest.mark.parametrize(
    "payload", [None, {}, {"run": {"namespace": "ci", "name": "b", "uid": "../x", "attempt": 1}}]
)
def test_payload_without_a_valid_run_is_dropped(service, reporter, payload):
    assert service.execute_run(payload) is None
    assert reporter.reports == []


def test_active_runs_snapshot_is_sorted_and_thread_safe():
    active = ActiveRuns()
    active.add(("b", 1))
    active.add(("a", 2))
    assert active.snapshot() == [{"uid": "a", "attempt": 2}, {"uid": "b", "attempt": 1}]
    active.discard(("a", 2))
    assert ("b", 1) in active and ("a", 2) not in active


def test_a_step_stopped_by_the_pods_shutdown_ends_pod_terminating(service, reporter):
    results = []
    worker = threading.Thread(
        target=lambda: results.append(service.execute_run(make_payload("sleep 30")))
    )
    worker.start()
    deadline = time.monotonic() + 5
    while not service._controls and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the step has started
    assert service.terminate_all() == 1
    worker.join(10)
    final = results[0]
    assert (final["phase"], final["reason"]) == ("Failed", "PodTerminating")
    assert "shut down" in final["message"]
    # retried by a retry policy like any infrastructure failure, never reported Cancelled
    assert [r["phase"] for r in reporter.reports] == ["Running", "Failed"]


def test_sigterm_gives_running_steps_the_grace_then_stops_them(config, reporter, clock):
    from celery import Celery, signals

    from runtimed import drain
    from runtimed.heartbeat import Heartbeat

    service = RunService(config, reporter, clock=clock, grace=0.5)
    beats = []
    drain.connect(
        Celery(set_as_current=False), service, Heartbeat(lambda: beats.append(1), 60), grace=1.0
    )
    results = []
    quick = threading.Thread(
        target=lambda: results.append(service.execute_run(make_payload("sleep 0.3", uid="quick")))
    )
    slow = threading.Thread(
        target=lambda: results.append(service.execute_run(make_payload("sleep 30", uid="slow")))
    )
    quick.start()
    slow.start()
    time.sleep(0.1)
    started = time.monotonic()
    signals.worker_shutting_down.send(sender="pod-a@host", sig="SIGTERM", how="Warm", exitcode=0)
    quick.join(10)
    slow.join(10)
    by_uid = {r["uid"]: r for r in results}
    assert by_uid["quick"]["phase"] == "Succeeded"  # finished within the grace
    assert by_uid["slow"]["reason"] == "PodTerminating"  # stopped once the grace was over
    assert 0.9 <= time.monotonic() - started < 5
