"""A server process settles once it has loaded what it serves: every view imported, what
survives a collection frozen out of the collector's passes (each check in a fresh
interpreter, as a server process starts)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def _python(code: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", **env},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_settle_imports_the_views_and_freezes_what_survives():
    out = _python(
        """
        import gc, sys
        import django
        django.setup()
        from portal.settle import settle
        assert "scheduling.log_views" not in sys.modules  # named only by the URLconf
        assert gc.get_freeze_count() == 0
        settle()
        print("scheduling.log_views" in sys.modules, gc.get_freeze_count())
        """
    )
    imported, frozen = out.split()
    assert imported == "True" and int(frozen) > 10_000


def test_the_web_process_settles_once_its_application_is_loaded():
    out = _python(
        """
        import gc
        import portal.asgi
        print(gc.get_freeze_count())
        """,
        KRUNTIMES_ASGI="1",
    )
    assert int(out) > 10_000
