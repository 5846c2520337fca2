"""``runtimed.delete_workspace``: deletes only ``<workspace>/persistent/<name>``, never through
a symlink, never while a Run here uses it, only for this pod; then confirms to the controller."""

from __future__ import annotations

import threading

import pytest
from celery import Celery

from runtimed.persistent import WorkspaceUse
from runtimed.protocol import DELETE_WORKSPACE_TASK, WORKSPACE_DELETED_TASK
from runtimed.tasks import RunService, register
from tests.helpers.payloads import make_payload


@pytest.fixture
def service(config, reporter, clock) -> RunService:
    return RunService(config, reporter, clock=clock, grace=1.0, ship_logs=False)


def request(name="data", pod=("pod-a", "uid-pod-a"), **extra) -> dict:
    return {
        "namespace": "ci",
        "name": name,
        "uid": "ws-uid-1",
        "pod": {"name": pod[0], "uid": pod[1]},
        **extra,
    }


def confirmations(reporter) -> list[dict]:
    return [kw["payload"] for name, kw in reporter.sent if name == WORKSPACE_DELETED_TASK]


def make_workspace(config, name="data"):
    path = config.workspace / "persistent" / name
    (path / "deep").mkdir(parents=True)
    (path / "deep" / "file").write_text("bytes")
    return path


def test_it_deletes_only_that_workspace_and_confirms(service, reporter, config):
    doomed, kept = make_workspace(config, "data"), make_workspace(config, "other")
    (config.workspace / "pod-file").write_text("")
    assert service.delete_workspace(request("data"))
    assert not doomed.exists()
    assert (kept / "deep" / "file").read_text() == "bytes"
    assert (config.workspace / "pod-file").exists()
    assert (config.workspace / "persistent").is_dir()
    assert confirmations(reporter) == [
        {
            "namespace": "ci",
            "name": "data",
            "uid": "ws-uid-1",
            "podName": "pod-a",
            "podUID": "uid-pod-a",
        }
    ]


def test_a_missing_directory_counts_as_deleted(service, reporter, config):
    assert service.delete_workspace(request("never-used"))  # no persistent workspace at all
    assert [c["name"] for c in confirmations(reporter)] == ["never-used"]
    make_workspace(config, "other")  # the persistent root exists, the workspace does not
    assert service.delete_workspace(request("never-used"))  # a re-sent request: confirmed again
    assert [c["name"] for c in confirmations(reporter)] == ["never-used", "never-used"]
    assert (config.workspace / "persistent" / "other" / "deep" / "file").exists()


def test_a_symlink_out_of_persistent_is_refused(service, reporter, config, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (config.workspace / "persistent").mkdir()
    (config.workspace / "persistent" / "data").symlink_to(outside)
    assert not service.delete_workspace(request("data"))
    assert (outside / "precious").read_text() == "keep"
    assert confirmations(reporter) == []


def test_a_symlinked_persistent_root_is_refused(service, reporter, config, tmp_path):
    outside = tmp_path / "outside"
    (outside / "data").mkdir(parents=True)
    (outside / "data" / "precious").write_text("keep")
    (config.workspace / "persistent").symlink_to(outside)
    assert not service.delete_workspace(request("data"))
    assert (outside / "data" / "precious").read_text() == "keep"
    assert confirmations(reporter) == []


def test_symlinks_inside_the_workspace_are_removed_not_followed(
    service, reporter, config, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    workspace = make_workspace(config)
    (workspace / "deep" / "link").symlink_to(outside)
    assert service.delete_workspace(request("data"))
    assert not workspace.exists()
    assert (outside / "precious").read_text() == "keep"


@pytest.mark.parametrize("name", ["..", ".", "../workspace", "a/b", "Data", ""])
def test_a_name_that_is_not_a_workspace_name_deletes_nothing(
    service, reporter, config, tmp_path, name
):
    make_workspace(config)
    (config.workspace / "pod-file").write_text("")
    assert not service.delete_workspace(request(name))
    assert (config.workspace / "pod-file").exists()
    assert (config.workspace / "persistent" / "data" / "deep" / "file").exists()
    assert confirmations(reporter) == []


@pytest.mark.parametrize("pod", [("pod-b", "uid-pod-a"), ("pod-a", "uid-old"), (None, None)])
def test_a_request_for_another_pod_is_ignored(service, reporter, config, pod):
    workspace = make_workspace(config)
    assert not service.delete_workspace(request(pod=pod))
    assert workspace.exists()
    assert confirmations(reporter) == []


@pytest.mark.parametrize(
    "payload", [None, [], {"name": "data"}, request(uid=""), {**request(), "pod": 1}]
)
def test_a_malformed_request_is_dropped(service, reporter, config, payload):
    workspace = make_workspace(config)
    assert not service.delete_workspace(payload)
    assert workspace.exists()
    assert confirmations(reporter) == []


def test_nothing_is_done_while_a_run_here_uses_the_workspace(service, reporter, config):
    workspace = make_workspace(config)
    gate = config.workspace / "gate"
    payload = make_payload(
        f"while [ ! -e {gate} ]; do sleep 0.02; done", workspace={"name": "data"}
    )
    running = threading.Thread(target=service.execute_run, args=(payload,))
    running.start()
    try:
        for _ in range(250):
            if reporter.reports:
                break
            threading.Event().wait(0.02)
        assert [r["phase"] for r in reporter.reports] == ["Running"]
        assert not service.delete_workspace(request("data"))
        assert (workspace / "deep" / "file").exists()
        assert confirmations(reporter) == []
        # another workspace is not held up by it
        make_workspace(config, "other")
        assert service.delete_workspace(request("other"))
    finally:
        gate.touch()
        running.join(10)
    assert reporter.reports[-1]["phase"] == "Succeeded"
    assert service.delete_workspace(request("data"))  # the controller's next try
    assert not workspace.exists()
    assert [c["name"] for c in confirmations(reporter)] == ["other", "data"]


def test_a_run_waits_while_its_workspace_is_being_deleted():
    use = WorkspaceUse()
    assert use.begin_delete("data")
    assert not use.begin_delete("data")  # one delete at a time
    entered = threading.Event()
    run = threading.Thread(target=lambda: (use.enter("data"), entered.set()))
    run.start()
    assert not entered.wait(0.2)  # held until the delete ends
    use.end_delete("data")
    assert entered.wait(5)
    run.join(5)
    assert use.in_use("data") and not use.begin_delete("data")
    use.leave("data")
    assert not use.in_use("data") and use.begin_delete("data")


def test_the_task_is_registered_on_the_pod_app(service, reporter, config):
    app = Celery("test-cleanup", set_as_current=False)
    register(app, service)
    workspace = make_workspace(config)
    app.tasks[DELETE_WORKSPACE_TASK](request("data"))
    assert not workspace.exists()
    assert [c["name"] for c in confirmations(reporter)] == ["data"]
