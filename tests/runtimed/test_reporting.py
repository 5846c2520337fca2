"""Reports and heartbeats go out by task name to ``control``; a broker error never raises."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

from runtimed.heartbeat import Heartbeat, connect, heartbeat_message
from runtimed.outbox import Outbox
from runtimed.reporting import Reporter, rfc3339, run_report
from runtimed.tasks import ActiveRuns


class FlakyBroker:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.sent: list[tuple[str, dict, str]] = []

    def send_task(self, name, kwargs=None, queue=None):
        if self.failures:
            self.failures -= 1
            raise ConnectionError("broker down")
        self.sent.append((name, kwargs, queue))


def test_reports_are_sent_by_name_to_control():
    broker = FlakyBroker(0)
    reporter = Reporter(broker.send_task)
    assert reporter.report_run({"uid": "u"})
    assert reporter.heartbeat({"podName": "p"})
    assert broker.sent == [
        ("scheduling.report_run", {"report": {"uid": "u"}}, "control"),
        ("scheduling.runtime_pod_heartbeat", {"heartbeat": {"podName": "p"}}, "control"),
    ]


def test_broker_errors_are_retried_with_backoff_then_given_up():
    sleeps: list[float] = []
    broker = FlakyBroker(2)
    reporter = Reporter(broker.send_task, retries=3, backoff=0.1, sleep=sleeps.append)
    assert reporter.report_run({"uid": "u"})
    assert sleeps == [0.1, 0.2] and len(broker.sent) == 1

    broker = FlakyBroker(100)
    sleeps.clear()
    reporter = Reporter(broker.send_task, retries=3, backoff=0.1, sleep=sleeps.append)
    assert reporter.report_run({"uid": "u"}) is False  # no exception
    assert sleeps == [0.1, 0.2, 0.4]


def test_rfc3339_is_utc_seconds():
    moment = datetime(2026, 5, 6, 7, 8, 9, 999999, tzinfo=timezone(timedelta(hours=2)))
    assert rfc3339(moment) == "2026-05-06T05:08:09Z"
    assert rfc3339(datetime(2026, 5, 6, 7, 8, 9)) == "2026-05-06T07:08:09Z"
    assert rfc3339(None) is None


def test_run_report_shape():
    report = run_report(
        namespace="ci",
        name="b",
        uid="u",
        attempt=0,
        pod_name="p",
        pod_uid="pu",
        phase="Failed",
        reason="RuntimeExecute",
        message="m" * 5000,
        exit_code=2,
        start=datetime(2026, 1, 1, tzinfo=UTC),
        end=None,
    )
    assert set(report) == {
        "namespace",
        "name",
        "uid",
        "attempt",
        "podName",
        "podUID",
        "phase",
        "reason",
        "message",
        "exitCode",
        "startTime",
        "completionTime",
    }
    assert len(report["message"]) == 4096
    assert report["startTime"] == "2026-01-01T00:00:00Z" and report["completionTime"] is None


def test_heartbeat_message(config, clock):
    active = ActiveRuns()
    active.add(("run-1", 2))
    message = heartbeat_message(config, active, clock)
    assert message["namespace"] == "ci" and message["runtime"] == "bash"
    assert (message["podName"], message["podUID"]) == ("pod-a", "uid-pod-a")
    assert message["podIncarnation"] == config.pod_incarnation
    assert message["capacity"] == {"runs": 2}
    assert message["activeRuns"] == [{"uid": "run-1", "attempt": 2}]
    assert message["time"] == "2026-01-02T03:04:05Z"
    assert message["workspacePath"] == str(config.workspace)
    assert isinstance(message["host"], str) and isinstance(message["pid"], int)
    assert message["recentReports"] == []


def test_heartbeats_repeat_final_reports_until_they_are_confirmed(config, clock):
    active = ActiveRuns(Outbox(limit=3))
    for n in range(4):
        active.ended({"uid": f"run-{n}", "attempt": 1, "phase": "Succeeded"})
    beat = heartbeat_message(config, active, clock)["recentReports"]
    assert [r["uid"] for r in beat] == ["run-1", "run-2", "run-3"]  # bounded: the oldest went
    assert active.confirm([("run-1", 1), ("run-3", 1), ("unknown", 1)]) == 2
    assert [r["uid"] for r in heartbeat_message(config, active, clock)["recentReports"]] == [
        "run-2"
    ]


def test_a_heartbeat_carries_at_most_32_reports_oldest_first(config, clock):
    active = ActiveRuns()
    for n in range(40):
        active.ended({"uid": f"run-{n:02d}", "attempt": 1, "phase": "Succeeded"})
    beat = heartbeat_message(config, active, clock)["recentReports"]
    assert [r["uid"] for r in beat] == [f"run-{n:02d}" for n in range(32)]


def test_the_outbox_survives_a_restart_on_the_same_disk(tmp_path):
    first = Outbox(tmp_path / "outbox")
    first.put({"uid": "a", "attempt": 1, "phase": "Succeeded"})
    first.put({"uid": "b", "attempt": 2, "phase": "Failed"})
    first.put({"uid": "a", "attempt": 1, "phase": "Succeeded", "message": "again"})
    first.confirm([("b", 2)])
    again = Outbox(tmp_path / "outbox")
    assert again.pending() == [{"uid": "a", "attempt": 1, "phase": "Succeeded", "message": "again"}]
    assert sorted(p.name for p in (tmp_path / "outbox").iterdir()) == ["a.1.json"]


def test_a_confirmation_for_another_pod_incarnation_is_ignored(config, reporter):
    from runtimed.tasks import RunService

    service = RunService(config, reporter)
    service.active.ended({"uid": "a", "attempt": 1, "phase": "Succeeded"})
    other = {"pod": {"name": "pod-a", "uid": "older"}, "reports": [{"uid": "a", "attempt": 1}]}
    assert service.confirm_reports(other) == 0
    assert service.confirm_reports({"pod": {}, "reports": "nope"}) == 0
    mine = {"pod": {"name": "pod-a", "uid": "uid-pod-a"}, "reports": [{"uid": "a", "attempt": 1}]}
    assert service.confirm_reports(mine) == 1
    assert service.active.recent_reports() == []


def test_heartbeat_beats_at_once_then_every_interval_until_stopped():
    beats = threading.Semaphore(0)
    heartbeat = Heartbeat(beats.release, interval=0.05)
    heartbeat.start()
    try:
        assert beats.acquire(timeout=1)  # immediately
        assert beats.acquire(timeout=2) and beats.acquire(timeout=2)  # then periodically
    finally:
        heartbeat.stop()
    assert not heartbeat.running


def test_heartbeat_survives_a_failing_beat():
    calls = []

    def beat():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")

    heartbeat = Heartbeat(beat, interval=0.01)
    heartbeat.start()
    try:
        for _ in range(200):
            if len(calls) >= 3:
                break
            threading.Event().wait(0.01)
    finally:
        heartbeat.stop()
    assert len(calls) >= 3


class Sender:
    """Stands in for Celery's consumer / WorkController: something with an ``app``."""

    def __init__(self, app) -> None:
        self.app = app


def test_heartbeat_follows_this_apps_worker_signals():
    from celery import Celery, signals

    app, other = Celery("mine", set_as_current=False), Celery("other", set_as_current=False)
    beats = threading.Semaphore(0)
    heartbeat = Heartbeat(beats.release, interval=60)
    connect(app, heartbeat)
    signals.worker_ready.send(sender=Sender(other))
    assert not heartbeat.running
    signals.worker_ready.send(sender=Sender(app))
    try:
        assert heartbeat.running and beats.acquire(timeout=2)
    finally:
        signals.worker_shutdown.send(sender=Sender(app))
    assert not heartbeat.running
