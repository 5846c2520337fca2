"""``manage.py bench scheduler``: one JSON line on stdout, every Run bound, affinity honoured,
the bench namespace gone afterwards unless ``--keep``."""

from __future__ import annotations

import json
from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from portal.models import Namespace
from scheduling.models import Run, Runtime, RuntimePod

pytestmark = pytest.mark.django_db

KEYS = {
    "runs",
    "pods",
    "affinity",
    "workspaces",
    "bound_per_s",
    "total_s",
    "pass_p50_ms",
    "pass_p99_ms",
    "queries_per_bind",
    "floor_s",
}
MODES = ("none", "required", "preferred", "anti")


def bench(*args: str) -> tuple[dict, str]:
    out, err = StringIO(), StringIO()
    call_command(
        "bench",
        "scheduler",
        "--runs",
        "40",
        "--pods",
        "4",
        "--probes",
        "5",
        *args,
        stdout=out,
        stderr=err,
    )
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, out.getvalue()
    return json.loads(lines[0]), err.getvalue()


def pods_by_label(key: str) -> dict[str, list[str]]:
    placed = defaultdict(list)
    for labels, pod in Run.objects.filter(namespace="bench").values_list("labels", "assigned_pod"):
        placed[labels[key]].append(pod)
    return placed


@pytest.mark.parametrize("mode", MODES)
def test_every_run_is_bound_and_the_line_has_the_keys(mode):
    result, progress = bench("--affinity", mode, "--keep")
    assert set(result) == KEYS
    assert (result["runs"], result["pods"], result["affinity"]) == (40, 4, mode)
    assert result["workspaces"] == 0
    assert result["bound_per_s"] > 0 and result["total_s"] > 0 and result["floor_s"] > 0
    assert 0 < result["pass_p50_ms"] <= result["pass_p99_ms"]
    assert result["queries_per_bind"] > 0
    assert "pass 1: bound" in progress  # progress goes to stderr

    runs = Run.objects.filter(namespace="bench")
    assert runs.count() == 40  # the probe Runs are gone again
    assert set(runs.values_list("phase", flat=True)) == {"Scheduled"}
    capacity = Runtime.objects.get(namespace="bench", name="bench").spec["capacity"]
    per_pod = defaultdict(int)
    for run in runs:
        # the floor's bulk UPDATE wrote back exactly what the scheduler chose
        assert run.status["assignedPod"] == run.assigned_pod
        assert run.status["assignedPodUID"] == run.assigned_pod_uid
        per_pod[run.assigned_pod] += 1
    assert max(per_pod.values()) <= capacity["resources"]["runs"]
    assert set(per_pod) <= set(
        RuntimePod.objects.filter(namespace="bench").values_list("name", flat=True)
    )
    if mode == "required":
        assert all(len(set(pods)) == 1 for pods in pods_by_label("cohort").values())
    if mode == "anti":
        assert all(len(set(pods)) == len(pods) for pods in pods_by_label("spread").values())


@pytest.mark.parametrize("mode", ("none", "required"))
def test_with_workspaces_every_run_lands_on_its_workspaces_bound_pod(mode):
    from workspaces.models import PersistentWorkspace

    result, progress = bench("--workspaces", "6", "--affinity", mode, "--keep")
    assert result["workspaces"] == 6
    assert "6 workspaces bound" in progress
    bound = {
        ws.name: (ws.bound_pod, ws.bound_pod_uid)
        for ws in PersistentWorkspace.objects.filter(namespace="bench")
    }
    assert len(bound) == 6 and len({pod for pod, _ in bound.values()}) == 4
    runs = Run.objects.filter(namespace="bench")
    assert runs.count() == 40
    for run in runs:
        assert run.phase == "Scheduled"
        assert (run.assigned_pod, run.assigned_pod_uid) == bound[run.workspace]


def test_workspaces_with_anti_affinity_is_a_command_error():
    with pytest.raises(CommandError, match="not with --affinity anti"):
        bench("--workspaces", "2", "--affinity", "anti")


def test_the_namespace_is_deleted_afterwards_and_leftovers_are_replaced():
    bench("--keep", "--runs", "12")
    assert Run.objects.filter(namespace="bench").count() == 12
    result, _ = bench("--probes", "0")
    assert result["runs"] == 40 and result["pass_p99_ms"] == 0
    assert not Run.objects.filter(namespace="bench").exists()
    assert not RuntimePod.objects.filter(namespace="bench").exists()
    assert not Runtime.objects.filter(namespace="bench").exists()
    from workspaces.models import PersistentWorkspace

    bench("--keep", "--workspaces", "3")
    bench("--probes", "0")
    assert not PersistentWorkspace.objects.filter(namespace="bench").exists()
    assert not Namespace.objects.filter(name="bench").exists()


def test_a_bad_shape_is_a_command_error():
    with pytest.raises(CommandError, match="at least 2 pods"):
        call_command(
            "bench",
            "scheduler",
            "--runs",
            "4",
            "--pods",
            "1",
            "--affinity",
            "anti",
            stdout=StringIO(),
            stderr=StringIO(),
        )
