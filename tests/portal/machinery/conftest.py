"""Fixtures shared by the machinery tests."""

from __future__ import annotations

import pytest

from tests.helpers.ownership import gadget


@pytest.fixture
def owner(admin_api) -> dict:
    """A Gadget named ``owner``, the owner the cascade tests delete."""
    return gadget(admin_api)
