"""The real services a test needs: in CI (``CI=true``) one that cannot be reached fails the test, never skips it."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def need_service(what: str, error: Exception | str) -> None:
    message = f"{what} is not reachable: {error}"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
