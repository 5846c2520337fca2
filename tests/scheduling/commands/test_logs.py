"""``manage.py logs``: the current or a chosen attempt, --tail, -f until the Run ends, errors."""

from __future__ import annotations

import pytest

from scheduling import logs
from scheduling.management.commands.logs import Command
from scheduling.models import Run
from tests.helpers.commands import run as call
from tests.helpers.operator import OPERATOR
from tests.helpers.records import append_log as append
from tests.helpers.records import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def build() -> Run:
    run = make_run("build")
    append(run, 0, "one\ntwo\n")
    append(run, 8, "three\n")
    return run


def test_prints_the_log(build):
    result = call("logs", "build")
    assert (result.code, result.out, result.err) == (0, "one\ntwo\nthree\n", "")


def test_tail(build):
    assert call("logs", "build", "--tail", "2").out == "two\nthree\n"


def test_another_namespace(build):
    from portal.machinery import store
    from portal.machinery.registry import registry
    from portal.models import Namespace

    store.create(
        registry.for_model(Namespace),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        context=OPERATOR,
    )
    other = make_run("build", namespace="team")
    append(other, 0, "team output\n")
    assert call("logs", "build", "-n", "team").out == "team output\n"
    assert call("logs", "build", "--namespace", "default").out == "one\ntwo\nthree\n"


def test_an_older_attempt(build):
    Run.objects.filter(pk=build.pk).update(attempt=2)
    build.refresh_from_db()
    append(build, 0, "retry\n")
    assert call("logs", "build").out == "retry\n"
    assert call("logs", "build", "--attempt", "1").out == "one\ntwo\nthree\n"


def test_a_missing_run_is_one_line_and_exit_code_1(db):
    result = call("logs", "ghost")
    assert result.code == 1
    assert result.out == ""
    assert result.err == 'Error from server (NotFound): runs.kruntimes.io "ghost" not found\n'


def test_an_attempt_that_does_not_exist(build):
    result = call("logs", "build", "--attempt", "3")
    assert result.code == 1
    assert result.err == (
        'error: attempt 3 of Run "build" does not exist: the Run is at attempt 1\n'
    )


def test_follow_prints_until_the_run_ends(build, monkeypatch):
    actions = [
        lambda: append(build, 14, "four\n"),
        lambda: Run.objects.filter(pk=build.pk).update(phase="Succeeded"),
    ]
    clock = {"now": 0.0}

    def sleep(seconds):
        clock["now"] += 0.2
        if actions:
            actions.pop(0)()

    monkeypatch.setattr(
        Command,
        "follow_policy",
        logs.FollowPolicy(poll_interval=0, grace=0.5, sleep=sleep, clock=lambda: clock["now"]),
    )
    result = call("logs", "build", "-f")
    assert (result.code, result.err) == (0, "")
    assert result.out == "one\ntwo\nthree\nfour\n"
    assert call("logs", "build", "--follow", "--tail", "1").out == "four\n"
