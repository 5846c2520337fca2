"""Fixtures for runtimed: plain pytest, no Django, no database."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtimed.config import PodConfig
from tests.helpers.payloads import FakeReporter, TickingClock


@pytest.fixture
def workspace(tmp_path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def config(workspace) -> PodConfig:
    return PodConfig(
        pod_name="pod-a",
        pod_uid="uid-pod-a",
        namespace="ci",
        runtime="bash",
        workspace=workspace,
        capacity={"runs": 2},
        heartbeat_seconds=5.0,
    )


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
def reporter() -> FakeReporter:
    return FakeReporter()
