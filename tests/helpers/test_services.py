"""A missing service fails the test that needs it, on every machine: never a skip."""

from __future__ import annotations

import pytest

from tests.helpers.services import need_service, require_redis


def test_a_missing_service_fails_and_does_not_skip():
    with pytest.raises(pytest.fail.Exception, match="Redis is not reachable: refused"):
        need_service("Redis", "refused")


def test_an_unreachable_redis_fails():
    with pytest.raises(pytest.fail.Exception, match="Redis is not reachable"):
        require_redis("redis://127.0.0.1:1/0")
