"""Runs in a PersistentWorkspace: ``<workspace>/persistent/<name>`` is their shared cwd, while
each Run keeps its runtimed-managed files in its own ``.kruntimes/runs/<uid>`` there."""

from __future__ import annotations

import json

import pytest

from runtimed import protocol
from runtimed.tasks import RunService
from tests.helpers.payloads import make_payload

SHOW_WHERE = (
    'echo "cwd=$(pwd)" >> "$KRUNTIME_OUTPUTS"; '
    'echo "workspace=$KRUNTIME_WORKSPACE" >> "$KRUNTIME_OUTPUTS"; '
    'echo "rundir=$KRUNTIME_RUN_DIR" >> "$KRUNTIME_OUTPUTS"; '
)


@pytest.fixture
def service(config, reporter, clock) -> RunService:
    return RunService(config, reporter, clock=clock, grace=1.0, ship_logs=False)


def shared(config, name="shared"):
    return config.workspace / "persistent" / name


def runs_dir(root):
    return root / ".kruntimes" / "runs"


def test_two_runs_in_one_workspace_share_its_cwd_but_not_their_run_dirs(service, config):
    first = service.execute_run(
        make_payload(
            SHOW_WHERE + "echo from-first > data.txt",
            uid="run-a",
            workspace={"name": "shared"},
        )
    )
    second = service.execute_run(
        make_payload(
            SHOW_WHERE + 'echo "seen=$(cat data.txt)" >> "$KRUNTIME_OUTPUTS"',
            uid="run-b",
            workspace={"name": "shared"},
        )
    )
    home = shared(config)
    assert first["phase"] == second["phase"] == "Succeeded", (first, second)
    assert second["outputs"]["seen"] == "from-first"  # the first Run's file, in the cwd
    for final, uid in ((first, "run-a"), (second, "run-b")):
        assert final["outputs"]["cwd"] == str(home)
        assert final["outputs"]["workspace"] == str(home)
        assert final["outputs"]["rundir"] == str(runs_dir(home) / uid)
        recorded = runs_dir(home) / uid / "attempt-1.result.json"
        assert json.loads(recorded.read_text()) == final
    # each Run's own source, untouched by the other
    assert "from-first" in (runs_dir(home) / "run-a" / "script.sh").read_text()
    assert "seen=" in (runs_dir(home) / "run-b" / "script.sh").read_text()
    # nothing of theirs in the pod's workspace
    assert not (config.workspace / "data.txt").exists()
    assert not runs_dir(config.workspace).exists()


def test_a_relative_working_dir_is_below_the_persistent_directory(service, config):
    payload = make_payload(
        SHOW_WHERE, uid="run-a", workspace={"name": "shared"}, workingDir="sub/dir"
    )
    final = service.execute_run(payload)
    assert final["outputs"]["cwd"] == str(shared(config) / "sub" / "dir")
    assert final["outputs"]["workspace"] == str(shared(config))


def test_the_workspace_directory_is_created_and_kept(service, config):
    assert not shared(config).exists()
    service.execute_run(make_payload("echo kept > f", workspace={"name": "shared"}))
    assert (shared(config) / "f").read_text() == "kept\n"  # runtimed deletes nothing after


def test_a_run_without_a_workspace_runs_in_the_pod_workspace_as_before(service, config):
    final = service.execute_run(make_payload(SHOW_WHERE + "echo x > data.txt", uid="run-a"))
    assert final["outputs"] == {
        "cwd": str(config.workspace),
        "workspace": str(config.workspace),
        "rundir": str(runs_dir(config.workspace) / "run-a"),
    }
    assert (config.workspace / "data.txt").exists()
    assert (runs_dir(config.workspace) / "run-a" / "attempt-1.result.json").exists()
    assert not (config.workspace / "persistent").exists()


@pytest.mark.parametrize(
    "reference",
    [
        {"name": "../escape"},
        {"name": "a/b"},
        {"name": "."},
        {"name": ".."},
        {"name": "Upper"},
        {"name": ""},
        {"name": 42},
        {"name": "x" * 254},
        {},
        "shared",
    ],
)
def test_a_bad_workspace_fails_the_run_clearly_and_touches_nothing(
    service, reporter, config, tmp_path, reference
):
    marker = tmp_path / "ran"
    final = service.execute_run(make_payload(f"touch {marker}", workspace=reference))
    assert [r["phase"] for r in reporter.reports] == ["Failed"]
    assert final == reporter.reports[0]
    assert final["reason"] == "PrepareSource"
    assert "workspace" in final["message"] and "cannot be executed" in final["message"]
    assert not marker.exists()
    assert sorted(p.name for p in config.workspace.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["workspace"]


def test_a_symlinked_workspace_directory_is_refused(service, reporter, config, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (config.workspace / "persistent").mkdir()
    shared(config).symlink_to(outside)
    final = service.execute_run(make_payload("touch planted", workspace={"name": "shared"}))
    assert (final["phase"], final["reason"]) == ("Failed", "RuntimeError")
    assert final["message"].endswith(f"{shared(config)} is a symlink")
    assert list(outside.iterdir()) == []


def test_a_symlinked_persistent_root_is_refused(service, reporter, config, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (config.workspace / "persistent").symlink_to(outside)
    final = service.execute_run(make_payload("touch planted", workspace={"name": "shared"}))
    assert (final["phase"], final["reason"]) == ("Failed", "RuntimeError")
    assert final["message"].endswith(f"{config.workspace / 'persistent'} is a symlink")
    assert list(outside.iterdir()) == []


def test_a_cancel_before_the_start_claims_the_attempt_in_the_workspace(
    service, reporter, config, tmp_path
):
    marker = tmp_path / "ran"
    payload = make_payload(f"touch {marker}", workspace={"name": "shared"})
    cancel = {"run": payload["run"], "pod": payload["pod"], "workspace": {"name": "shared"}}
    cancelled = service.cancel_run(cancel)
    assert cancelled["phase"] == "Cancelled"
    assert (runs_dir(shared(config)) / "run-uid-1" / "attempt-1.started").exists()
    assert service.execute_run(payload) == cancelled  # the late dispatch: re-sent, not run
    assert not marker.exists()


def test_a_redelivery_resends_the_report_recorded_in_the_workspace(service, reporter, config):
    counter = config.workspace / "count"
    payload = make_payload(f"echo ran >> {counter}", workspace={"name": "shared"})
    first = service.execute_run(payload)
    assert service.execute_run(payload) == first
    assert counter.read_text() == "ran\n"
    assert [r["phase"] for r in reporter.reports] == ["Running", "Succeeded", "Succeeded"]


def test_run_roots_lists_the_pod_workspace_then_each_persistent_one(config, tmp_path):
    for name in ("b", "a"):
        (shared(config, name)).mkdir(parents=True)
    (config.workspace / "persistent" / "file").write_text("")
    (config.workspace / "persistent" / "link").symlink_to(tmp_path)
    assert protocol.run_roots(config.workspace) == [
        config.workspace,
        shared(config, "a"),
        shared(config, "b"),
    ]


def test_run_roots_without_persistent_workspaces_is_the_pod_workspace(config):
    assert protocol.run_roots(config.workspace) == [config.workspace]
