"""labelSelector in the database equals the Python selector (the reference) on generated
labels and selectors, every operator; lists filter before paging and continue correctly."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portal.machinery.label_query import selector_q
from portal.machinery.labels import (
    DOES_NOT_EXIST,
    EQUALS,
    EXISTS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    Requirement,
    Selector,
    parse_selector_string,
)
from portal.machinery.listing import list_objects
from portal.machinery.registry import registry
from tests.testapp.models import Widget

pytestmark = pytest.mark.django_db

KEYS = ["app", "tier", "kruntimes.io/pod", "x"]
VALUES = ["a", "b", "c", ""]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)


@st.composite
def requirements(draw):
    key = draw(st.sampled_from(KEYS))
    operator = draw(st.sampled_from([EQUALS, NOT_EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST]))
    if operator in (EXISTS, DOES_NOT_EXIST):
        values: frozenset[str] = frozenset()
    elif operator in (EQUALS, NOT_EQUALS):
        values = frozenset([draw(st.sampled_from(VALUES))])
    else:
        values = frozenset(draw(st.sets(st.sampled_from(VALUES), min_size=1, max_size=3)))
    return Requirement(key, operator, values)


selectors = st.builds(
    Selector, st.lists(requirements(), max_size=3).map(tuple), st.booleans().map(lambda b: False)
)


def _check(rows: list[dict], selector: Selector) -> None:
    with transaction.atomic():
        Widget.objects.bulk_create(
            [
                Widget(namespace="default", name=f"w{i}", labels=labels)
                for i, labels in enumerate(rows)
            ]
        )
        found = set(Widget.objects.filter(selector_q(selector)).values_list("name", flat=True))
        expected = {f"w{i}" for i, labels in enumerate(rows) if selector.matches(labels)}
        transaction.set_rollback(True)
    assert found == expected, selector.to_string() if not selector.match_nothing else "nothing"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(labels_st, max_size=12), selectors)
def test_sql_selector_equals_the_python_reference(rows, selector):
    _check(rows, selector)


@pytest.mark.postgres
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(labels_st, max_size=12), selectors)
def test_sql_selector_equals_the_python_reference_on_this_database(rows, selector):
    """The same property, marked for the PostgreSQL run (DATABASE_URL): containment and
    key-exists there, JSON functions on SQLite."""
    _check(rows, selector)


def test_match_nothing_and_parsed_selectors():
    _check([{"app": "a"}], Selector(match_nothing=True))
    _check([{"app": "a"}, {"app": "b"}, {}], parse_selector_string("app notin (a),!tier"))


def test_a_list_filters_before_paging_and_continues():
    kind = registry.for_model(Widget)
    Widget.objects.bulk_create(
        [
            Widget(
                namespace="default", name=f"w{i:03d}", labels={"app": "x" if i % 10 == 0 else "y"}
            )
            for i in range(100)
        ]
    )
    page, token = list_objects(kind, "default", {"labelSelector": "app=x", "limit": "4"})
    assert [w.name for w in page] == ["w000", "w010", "w020", "w030"]
    assert token
    rest, last = list_objects(kind, "default", {"labelSelector": "app=x", "continue": token})
    assert [w.name for w in rest] == [f"w{i:03d}" for i in range(40, 100, 10)]
    assert last == ""
