"""Reading request vectors: every Run takes at least one run slot, whatever its row says."""

from __future__ import annotations

import pytest

from scheduling.resources import run_requests


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        (None, ({"runs": 1}, [])),
        ({"runs": 0}, ({"runs": 1}, [])),
        ({"runs": "0"}, ({"runs": 1}, [])),
        ({"runs": 3, "example.com/gpu": 0}, ({"runs": 3}, [])),
        ({"example.com/gpu": 2}, ({"example.com/gpu": 2, "runs": 1}, [])),
        ({"runs": "500m"}, ({}, ["runs"])),
        ({"runs": 1, "cpu": "0.5"}, ({"runs": 1}, ["cpu"])),
    ],
    ids=[
        "default",
        "runs-zero",
        "runs-zero-string",
        "zero-dropped",
        "runs-filled",
        "runs-fractional",
        "other-fractional",
    ],
)
def test_run_requests_always_take_a_run_slot(requests, expected):
    spec = {} if requests is None else {"resources": {"requests": requests}}
    assert run_requests(spec) == expected
