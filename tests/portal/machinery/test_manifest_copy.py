"""json_copy: the copy a manifest takes of a JSON column is a deep one, as deepcopy's."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from portal.machinery.manifest import json_copy

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
documents = st.recursive(
    scalars,
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(documents)
def test_equals_deepcopy(document):
    assert json_copy(document) == copy.deepcopy(document)


def _containers(value):
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


@given(documents)
def test_shares_no_container_with_the_original(document):
    copied = json_copy(document)
    original = {id(container) for container in _containers(document)}
    assert not original & {id(container) for container in _containers(copied)}


def test_a_change_to_the_copy_leaves_the_original():
    original = {"spec": {"steps": [{"name": "a", "env": {"X": "1"}}]}}
    copied = json_copy(original)
    copied["spec"]["steps"][0]["env"]["X"] = "2"
    copied["spec"]["steps"].append({"name": "b"})
    assert original == {"spec": {"steps": [{"name": "a", "env": {"X": "1"}}]}}
