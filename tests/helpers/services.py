"""The real services a test needs. One that cannot be reached fails the test, in CI and on a
developer's machine alike: a skip would report a Redis broker path as fine that never ran.
``make test-fast`` needs none of them (the tests that do start real processes)."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def need_service(what: str, error: Exception | str) -> None:
    pytest.fail(
        f"{what} is not reachable: {error} (make test needs it; make test-fast does not)",
        pytrace=False,
    )


def require_redis(url: str) -> None:
    """Fail the test unless the Redis at ``url`` answers."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any reason it cannot be reached
        need_service("Redis", exc)
