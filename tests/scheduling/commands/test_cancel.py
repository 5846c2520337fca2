"""``manage.py cancel``: the cancel request the API and the admin make, from a shell."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from scheduling.models import Run
from scheduling.scheduler import default_framework, run_pass
from tests.helpers.records import fresh, make_pod, make_run, make_runtime

pytestmark = pytest.mark.django_db


def cancel(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("cancel", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_pending_run_is_cancelled_at_the_next_pass():
    make_runtime()
    run = make_run("r1")
    out, _ = cancel("r1")
    assert out.strip() == "run.kruntimes.io/r1 cancel requested"
    assert fresh(run).cancel_requested
    run_pass(default_framework(), timezone.now())
    assert fresh(run).phase == "Cancelled"


def test_a_bound_run_keeps_its_phase_until_its_pod_reports():
    make_runtime()
    make_pod("bash-a")
    run = make_run("r1")
    run_pass(default_framework(), timezone.now())
    cancel("r1")
    assert (fresh(run).phase, fresh(run).cancel_requested) == ("Scheduled", True)


def test_repeating_or_cancelling_a_finished_run_changes_nothing():
    make_runtime()
    make_run("r1")
    cancel("r1")
    version = Run.objects.get(name="r1").resource_version
    out, _ = cancel("r1")
    assert "already requested" in out
    Run.objects.filter(name="r1").update(phase="Succeeded")
    out, _ = cancel("r1")
    assert "already ended (Succeeded)" in out
    assert Run.objects.get(name="r1").resource_version == version


def test_a_missing_run_is_an_error_and_the_others_are_still_cancelled():
    make_runtime()
    make_run("r1")
    with pytest.raises(CommandError) as failure:
        cancel("nope", "r1", "-n", "default")
    assert failure.value.returncode == 1
    assert Run.objects.get(name="r1").cancel_requested
