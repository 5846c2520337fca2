"""Schemathesis over the whole OpenAPI schema, against a live server over HTTP: whatever it
generates from the schema (valid and invalid bodies, parameters, paths), the server answers
without a 5xx. Bounded (deterministic generation, 10 examples an operation) to stay quick."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db(transaction=True)
MAX_EXAMPLES = 10


def test_no_generated_request_gets_a_server_error(live_server, admin_user):
    token = Token.objects.create(user=admin_user).key
    cli = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    done = subprocess.run(
        [
            cli,
            "run",
            f"{live_server.url}/api/schema/",
            "--checks",
            "not_a_server_error",
            "-H",
            f"Authorization: Bearer {token}",
            "-n",
            str(MAX_EXAMPLES),
            "--phases",
            "examples,fuzzing",
            "--generation-deterministic",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    summary = re.search(r"(\d+) generated, (\d+) passed", output)
    print(summary.group(0) if summary else output[-3000:])
    assert done.returncode == 0, output[-6000:]
    assert summary is not None and int(summary.group(1)) > 300
    assert summary.group(1) == summary.group(2)
