"""``manage.py demo``: the Workflow's result is its exit code, and a run that did not succeed
is reported without stopping the console it keeps serving."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management.base import OutputWrapper

from portal.management.commands.demo import Command

pytestmark = pytest.mark.django_db


def test_a_run_that_cannot_start_is_reported_and_its_code_returned():
    command = Command()
    command.stdout, command.stderr = OutputWrapper(StringIO()), OutputWrapper(StringIO())
    code = command._run("no-such-workflow", "default", timeout=5)
    assert code != 0
    assert "error:" in command.stderr._out.getvalue()
    assert "no-such-workflow" in command.stderr._out.getvalue()
