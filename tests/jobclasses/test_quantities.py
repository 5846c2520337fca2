"""CPU and memory quantities with Kubernetes semantics, at their boundaries."""

from __future__ import annotations

from decimal import Decimal

import pytest

from jobclasses.quantities import amount, as_written, resource_errors
from portal.machinery.quantities import QUANTITY_MAX


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("250m", Decimal("0.25")),
        ("1000m", Decimal(1)),
        (2, Decimal(2)),
        ("2", Decimal(2)),
        (0.5, Decimal("0.5")),
        ("1Ki", Decimal(1024)),
        ("1.5Gi", Decimal(1536 * 1024 * 1024)),
        ("1k", Decimal(1000)),
        ("1e3", Decimal(1000)),
        ("1E", Decimal(10**18)),
        ("+1", Decimal(1)),
        (".5", Decimal("0.5")),
    ],
)
def test_quantities_parse_as_kubernetes_reads_them(value, expected):
    assert amount(value) == expected


def test_equal_amounts_in_different_spellings_compare_equal():
    assert amount("1") == amount("1000m") == amount(1) == amount("0.001k")


@pytest.mark.parametrize(
    "value",
    ["", " 1", "1 ", "1gi", "1KiB", "one", "1.2.3", "--1", "1e", "0x10", True, None, [], {}],
)
@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_what_is_not_a_quantity_is_refused(resource, value):
    assert resource_errors(resource, value)


@pytest.mark.parametrize(
    ("resource", "value", "ok"),
    [
        ("cpu", "0", True),
        ("cpu", "1m", True),
        ("cpu", "0.001", True),
        ("cpu", "0.0005", False),  # finer than a millicore
        ("cpu", "1500u", False),
        ("cpu", "1000u", True),
        ("cpu", f"{QUANTITY_MAX}m", True),
        ("cpu", f"{QUANTITY_MAX + 1}m", False),
        ("cpu", "-1m", False),
        ("memory", "0", True),
        ("memory", "1", True),
        ("memory", "0.5", False),  # fractional bytes
        ("memory", "500m", False),
        ("memory", "7Ei", True),
        ("memory", "8Ei", False),  # more than int64 bytes
        ("memory", str(QUANTITY_MAX), True),
        ("memory", str(QUANTITY_MAX + 1), False),
        ("memory", "-1", False),
        ("memory", "1e400", False),
    ],
)
def test_quantity_bounds(resource, value, ok):
    assert (resource_errors(resource, value) == []) is ok


def test_amounts_are_shown_as_written():
    assert as_written("250m") == "250m"
    assert as_written(2) == "2"
    assert as_written(0.5) == "0.5"
