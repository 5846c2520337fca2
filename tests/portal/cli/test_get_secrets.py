"""``manage.py get secrets``: NAME TYPE DATA AGE, and no value in a listing's YAML/JSON."""

from __future__ import annotations

import pytest

from tests.helpers.commands import apply, run
from tests.helpers.secrets import VALUE, VALUE_B64, config_map, secret

pytestmark = pytest.mark.django_db


@pytest.fixture
def applied(tmp_path):
    apply(
        tmp_path,
        secret("creds", {"password": VALUE_B64}, stringData={"user": "ci"}),
        config_map("app", {"mode": "fast"}),
    )


def test_the_table_shows_type_and_key_count(applied):
    result = run("get", "secrets")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert lines[1].split()[:3] == ["creds", "Opaque", "2"]
    assert run("get", "cm").out.splitlines()[0].split() == ["NAME", "DATA", "AGE"]


@pytest.mark.parametrize("output", ["yaml", "json"])
@pytest.mark.parametrize("scope", [[], ["-A"]])
def test_a_listing_shows_no_values(applied, output, scope):
    result = run("get", "secrets", "-o", output, *scope)
    assert result.code == 0, result.err
    assert "creds" in result.out
    assert VALUE_B64 not in result.out and VALUE not in result.out
    assert "password" not in result.out  # not even the keys: a list item has no data


def test_one_named_secret_shows_its_data_as_a_get_does(applied):
    result = run("get", "secret", "creds", "-o", "yaml")
    assert VALUE_B64 in result.out
