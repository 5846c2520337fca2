"""The chart's crds/ are what ``manage.py export-crds`` prints now: a serializer change without
a re-export fails here (``make crds`` writes the file again)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "deploy" / "helm" / "kruntimes-portal" / "crds" / "kruntimes-crds.yaml"


def test_the_committed_crds_equal_what_export_crds_prints():
    # the real settings (the test settings add a test-only kind), as an operator runs it
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"}
    printed = subprocess.run(
        [sys.executable, "manage.py", "export-crds"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout

    assert printed.startswith("apiVersion: apiextensions.k8s.io/v1")
    assert COMMITTED.read_text() == printed, "re-export the CRDs: make crds"
