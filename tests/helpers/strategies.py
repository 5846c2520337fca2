"""Hypothesis strategies for scheduler tests: labels and compiled selectors over a small
alphabet (so selectors often match), with keys that need quoting in a JSON path."""

from __future__ import annotations

from hypothesis import strategies as st

from portal.machinery.labels import (
    DOES_NOT_EXIST,
    EQUALS,
    EXISTS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    NOTHING,
    Requirement,
    Selector,
)

KEYS = ["app", "tier", "example.com/group"]
VALUES = ["a", "b", ""]
OPERATORS = [EQUALS, NOT_EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST]

labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


@st.composite
def requirements(draw) -> Requirement:
    key, operator = draw(st.sampled_from(KEYS)), draw(st.sampled_from(OPERATORS))
    if operator in (EXISTS, DOES_NOT_EXIST):
        return Requirement(key, operator)
    count = 1 if operator in (EQUALS, NOT_EQUALS) else draw(st.integers(1, 3))
    return Requirement(
        key,
        operator,
        frozenset(
            draw(st.lists(st.sampled_from(VALUES), min_size=count, max_size=count, unique=True))
        ),
    )


selectors = st.one_of(
    st.just(NOTHING), st.lists(requirements(), max_size=3).map(lambda reqs: Selector(tuple(reqs)))
)
