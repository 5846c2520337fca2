"""Label selectors (portal.machinery.labels): validation, compilation, query-string syntax."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from portal.machinery import errors
from portal.machinery.labels import (
    DOES_NOT_EXIST,
    EQUALS,
    EVERYTHING,
    EXISTS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    NOTHING,
    LabelSelectorError,
    Requirement,
    compile_selector,
    parse_selector_string,
    validate_label_selector,
)
from tests.helpers.examples import examples

P = "spec.affinity.runAffinity.required[0].labelSelector"


def reasons(errs):
    return [(e.field, e.reason) for e in errs]


def expr(key="app", operator="In", values=("web",)):
    out = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = list(values)
    return out


# --- validate_label_selector --------------------------------------------------------------


@pytest.mark.parametrize(
    "selector, expected",
    [
        (None, []),
        ({}, []),
        ({"matchLabels": {"app": "web"}}, []),
        ({"matchLabels": {}, "matchExpressions": []}, []),
        (
            {
                "matchExpressions": [
                    expr(),
                    expr("tier", "NotIn", ["a", "b"]),
                    expr("gpu", "Exists", None),
                    expr("spot", "DoesNotExist", []),
                ]
            },
            [],
        ),
        ("app=web", [(P, errors.TYPE_INVALID)]),
        ({"matchLabel": {}}, [(f"{P}.matchLabel", errors.FORBIDDEN)]),
        ({"matchLabels": {"-app": "web"}}, [(f"{P}.matchLabels", errors.INVALID)]),
        ({"matchLabels": {"app": "-web"}}, [(f"{P}.matchLabels[app]", errors.INVALID)]),
        ({"matchLabels": {"app": "w" * 64}}, [(f"{P}.matchLabels[app]", errors.INVALID)]),
        ({"matchLabels": ["app"]}, [(f"{P}.matchLabels", errors.TYPE_INVALID)]),
        ({"matchExpressions": {}}, [(f"{P}.matchExpressions", errors.TYPE_INVALID)]),
        ({"matchExpressions": ["app"]}, [(f"{P}.matchExpressions[0]", errors.TYPE_INVALID)]),
        (
            {"matchExpressions": [expr(), expr(operator="Gt", values=["1"])]},
            [(f"{P}.matchExpressions[1].operator", errors.NOT_SUPPORTED)],
        ),
        (
            {"matchExpressions": [expr(operator="in")]},
            [(f"{P}.matchExpressions[0].operator", errors.NOT_SUPPORTED)],
        ),
        (
            {"matchExpressions": [{"key": "app", "values": ["a"]}]},
            [(f"{P}.matchExpressions[0].operator", errors.REQUIRED)],
        ),
        ({"matchExpressions": [expr(key="")]}, [(f"{P}.matchExpressions[0].key", errors.REQUIRED)]),
        (
            {"matchExpressions": [{"operator": "Exists"}]},
            [(f"{P}.matchExpressions[0].key", errors.REQUIRED)],
        ),
        (
            {"matchExpressions": [expr(key="a/b/c")]},
            [(f"{P}.matchExpressions[0].key", errors.INVALID)],
        ),
        (
            {"matchExpressions": [expr(key=3)]},
            [(f"{P}.matchExpressions[0].key", errors.TYPE_INVALID)],
        ),
        (
            {"matchExpressions": [expr(values=[])]},
            [(f"{P}.matchExpressions[0].values", errors.REQUIRED)],
        ),
        (
            {"matchExpressions": [expr(operator="NotIn", values=None)]},
            [(f"{P}.matchExpressions[0].values", errors.REQUIRED)],
        ),
        (
            {"matchExpressions": [expr(operator="Exists", values=["x"])]},
            [(f"{P}.matchExpressions[0].values", errors.FORBIDDEN)],
        ),
        (
            {"matchExpressions": [expr(operator="DoesNotExist", values=["x"])]},
            [(f"{P}.matchExpressions[0].values", errors.FORBIDDEN)],
        ),
        (
            {"matchExpressions": [expr(), expr(values=["ok", "-bad"])]},
            [(f"{P}.matchExpressions[1].values[1]", errors.INVALID)],
        ),
        (
            {"matchExpressions": [{**expr(), "values": "web"}]},
            [(f"{P}.matchExpressions[0].values", errors.TYPE_INVALID)],
        ),
        (
            {"matchExpressions": [expr(values=[1])]},
            [(f"{P}.matchExpressions[0].values", errors.TYPE_INVALID)],
        ),
        (
            {"matchExpressions": [{**expr(), "value": "x"}]},
            [(f"{P}.matchExpressions[0].value", errors.FORBIDDEN)],
        ),
    ],
)
def test_validate_label_selector(selector, expected):
    assert reasons(validate_label_selector(selector, P)) == expected


def test_validate_messages():
    [err] = validate_label_selector({"matchExpressions": [expr(operator="Gt")]}, P)
    assert err.message == (
        'Unsupported value: "Gt": supported values: "In", "NotIn", "Exists", "DoesNotExist"'
    )
    [err] = validate_label_selector({"bogus": 1}, P)
    assert "unknown field" in err.message


# --- compile_selector / matches -----------------------------------------------------------


@pytest.mark.parametrize(
    "selector, labels, expected",
    [
        (None, {}, False),
        (None, {"app": "web"}, False),
        ({}, {}, True),
        ({}, {"app": "web"}, True),
        ({}, None, True),
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "api"}, False),
        ({"matchLabels": {"app": "web"}}, {}, False),
        ({"matchLabels": {"app": ""}}, {"app": ""}, True),
        ({"matchLabels": {"app": ""}}, {}, False),
        ({"matchExpressions": [expr("app", "In", ["web", "api"])]}, {"app": "api"}, True),
        ({"matchExpressions": [expr("app", "In", ["web"])]}, {}, False),  # In needs the key
        ({"matchExpressions": [expr("app", "NotIn", ["web"])]}, {}, True),  # absent is "not in"
        ({"matchExpressions": [expr("app", "NotIn", ["web"])]}, {"app": "web"}, False),
        ({"matchExpressions": [expr("app", "NotIn", ["web"])]}, {"app": "api"}, True),
        ({"matchExpressions": [expr("gpu", "Exists", None)]}, {"gpu": ""}, True),
        ({"matchExpressions": [expr("gpu", "Exists", None)]}, {}, False),
        ({"matchExpressions": [expr("gpu", "DoesNotExist", None)]}, {}, True),
        ({"matchExpressions": [expr("gpu", "DoesNotExist", None)]}, {"gpu": "a"}, False),
        # matchLabels AND matchExpressions
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [expr("gpu", "Exists", None)]},
            {"app": "web"},
            False,
        ),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [expr("gpu", "Exists", None)]},
            {"app": "web", "gpu": "1"},
            True,
        ),
    ],
)
def test_compile_selector_matches(selector, labels, expected):
    assert compile_selector(selector).matches(labels) is expected


def test_compile_selector_special_cases():
    assert compile_selector(None) == NOTHING
    assert not NOTHING.is_empty
    assert compile_selector({}) == EVERYTHING
    assert compile_selector({"matchLabels": {}, "matchExpressions": []}).is_empty
    assert not compile_selector({"matchLabels": {"a": "b"}}).is_empty
    assert compile_selector({"matchLabels": {"a": "b"}}).requirements == (
        Requirement("a", EQUALS, frozenset({"b"})),
    )


def test_compile_selector_invalid_raises():
    bad = {"matchExpressions": [expr(values=[])]}
    with pytest.raises(LabelSelectorError) as info:
        compile_selector(bad, P)
    assert isinstance(info.value, ValueError)
    assert info.value.field == f"{P}.matchExpressions[0].values"
    assert "must be specified" in info.value.message
    assert reasons(info.value.causes) == [(f"{P}.matchExpressions[0].values", errors.REQUIRED)]


def test_selector_is_hashable_and_canonical():
    one = compile_selector({"matchLabels": {"a": "1", "b": "2"}})
    two = compile_selector({"matchLabels": {"b": "2", "a": "1"}})
    assert one == two and hash(one) == hash(two)
    assert {one: "cached"}[two] == "cached"
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.requirements = ()  # type: ignore[misc]


def test_requirement_guards_hand_built_values():
    with pytest.raises(ValueError):
        Requirement("a", "Gt", frozenset({"1"}))
    with pytest.raises(ValueError):
        Requirement("a", EQUALS, frozenset({"1", "2"}))
    with pytest.raises(ValueError):
        Requirement("a", IN, frozenset())
    with pytest.raises(ValueError):
        Requirement("a", EXISTS, frozenset({"1"}))


# --- query-string syntax ------------------------------------------------------------------


def R(key, op, *values):  # noqa: N802 - reads like a constructor in the tables
    return Requirement(key, op, frozenset(values))


@pytest.mark.parametrize(
    "text, requirements",
    [
        ("", ()),
        ("   ", ()),
        ("a=b", (R("a", EQUALS, "b"),)),
        ("a==b", (R("a", EQUALS, "b"),)),
        ("a!=b", (R("a", NOT_EQUALS, "b"),)),
        (" a = b ", (R("a", EQUALS, "b"),)),
        ("a=", (R("a", EQUALS, ""),)),
        ("a", (R("a", EXISTS),)),
        ("!a", (R("a", DOES_NOT_EXIST),)),
        (" ! a ", (R("a", DOES_NOT_EXIST),)),
        ("a in (b,c)", (R("a", IN, "b", "c"),)),
        ("a in ( b , c )", (R("a", IN, "b", "c"),)),
        ("a in(b)", (R("a", IN, "b"),)),
        ("a notin (b)", (R("a", NOT_IN, "b"),)),
        ("a in ()", (R("a", IN, ""),)),  # upstream reads "()" as the empty value
        ("a in (b,)", (R("a", IN, "b", ""),)),
        ("in in (in)", (R("in", IN, "in"),)),
        (
            "app.kubernetes.io/name=portal,tier",
            (R("app.kubernetes.io/name", EQUALS, "portal"), R("tier", EXISTS)),
        ),
        (
            "b=1, a notin (x,y), !c",
            (R("a", NOT_IN, "x", "y"), R("b", EQUALS, "1"), R("c", DOES_NOT_EXIST)),
        ),
    ],
)
def test_parse_selector_string(text, requirements):
    assert parse_selector_string(text).requirements == requirements


@pytest.mark.parametrize(
    "text",
    [
        "a,",
        ",a",
        "a,,b",
        "a=b=c",
        "a b",
        "a=(b)",
        "a in b",
        "a in (b",
        "a in (b c)",
        "a in (b))",
        "a notin",
        "!",
        "!a=b",
        "a!b",
        "a > 1",
        "a < 1",
        "a=b c",
        "-a=b",
        "a=-b",
        "a/b/c",
        "a in (b,-c)",
        "a=" + "v" * 64,
        "k" * 64,
        "a=é",
    ],
)
def test_parse_selector_string_rejects(text):
    with pytest.raises(LabelSelectorError) as info:
        parse_selector_string(text)
    assert info.value.field == "labelSelector"
    assert info.value.causes[0].field == "labelSelector"


@pytest.mark.parametrize(
    "text, labels, expected",
    [
        ("a!=b", {}, True),  # != matches objects that lack the key
        ("a!=b", {"a": "b"}, False),
        ("a=b", {}, False),
        ("a in (b)", {}, False),
        ("a notin (b)", {}, True),
        ("a,b=1", {"a": "", "b": "1"}, True),
        ("a,b=1", {"b": "1"}, False),
    ],
)
def test_parsed_selector_matches(text, labels, expected):
    assert parse_selector_string(text).matches(labels) is expected


def test_to_string_is_stable():
    sel = compile_selector(
        {
            "matchLabels": {"b": "1", "a": "2"},
            "matchExpressions": [
                expr("a", "In", ["z", "y"]),
                expr("c", "DoesNotExist", None),
                expr("c", "NotIn", ["q"]),
                expr("d", "Exists", None),
            ],
        }
    )
    assert sel.to_string() == "a in (y,z),a=2,b=1,c notin (q),!c,d"
    assert parse_selector_string("a!=1").to_string() == "a!=1"
    assert EVERYTHING.to_string() == ""
    with pytest.raises(ValueError):
        NOTHING.to_string()


# --- properties against an independent reference model -----------------------------------

KEYS = ["a", "b", "c", "x.io/d"]
VALUES = ["1", "2", "3", ""]


def reference_matches(requirements, labels):
    """Straight from the spec: requirements are ANDed."""
    for key, op, values in requirements:
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)
value_lists = st.lists(st.sampled_from(VALUES), min_size=1, max_size=3)
set_exprs = st.tuples(st.sampled_from(KEYS), st.sampled_from(["In", "NotIn"]), value_lists)
exist_exprs = st.tuples(
    st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"]), st.just([])
)
expressions = st.lists(st.one_of(set_exprs, exist_exprs), max_size=4)
selector_dicts = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
        "matchExpressions": expressions,
    },
)


def to_dict_expr(key, op, values):
    out = {"key": key, "operator": op}
    if values:
        out["values"] = values
    return out


def as_api(d):
    if "matchExpressions" in d:
        d = {**d, "matchExpressions": [to_dict_expr(*e) for e in d["matchExpressions"]]}
    return d


api_selectors = selector_dicts.map(as_api)


def dict_model(selector):
    model = [(k, "In", {v}) for k, v in (selector.get("matchLabels") or {}).items()]
    model += [
        (e["key"], e["operator"], set(e.get("values", [])))
        for e in selector.get("matchExpressions", [])
    ]
    return model


@settings(max_examples=examples(300))
@given(api_selectors, st.lists(label_sets, min_size=1, max_size=8))
def test_compile_selector_agrees_with_reference(selector, label_list):
    model = dict_model(selector)
    compiled = compile_selector(selector)
    for labels in label_list:
        assert compiled.matches(labels) is reference_matches(model, labels)


# (rendered operator, reference operator, value count)
STRING_OPS = [
    ("=", "In", 1),
    ("==", "In", 1),
    ("!=", "NotIn", 1),
    ("in", "In", None),
    ("notin", "NotIn", None),
    ("", "Exists", 0),
    ("!", "DoesNotExist", 0),
]
spaces = st.sampled_from(["", " ", "  "])


@st.composite
def selector_strings(draw):
    """A query string plus the reference model it denotes."""
    parts, model = [], []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(KEYS))
        op, ref_op, count = draw(st.sampled_from(STRING_OPS))
        s1, s2 = draw(spaces), draw(spaces)
        if count == 0:
            parts.append(f"{s1}{op}{s2}{key}{draw(spaces)}")
            model.append((key, ref_op, set()))
        elif count == 1:
            value = draw(st.sampled_from(VALUES))
            parts.append(f"{s1}{key}{s2}{op}{draw(spaces)}{value}")
            model.append((key, ref_op, {value}))
        else:
            values = draw(value_lists)
            inner = f",{draw(spaces)}".join(values)
            parts.append(f"{s1}{key} {op}{s2}({inner}){draw(spaces)}")
            model.append((key, ref_op, set(values)))
    return ",".join(parts), model


@settings(max_examples=examples(300))
@given(selector_strings(), st.lists(label_sets, min_size=1, max_size=8))
def test_parse_selector_string_agrees_with_reference(case, label_list):
    text, model = case
    parsed = parse_selector_string(text)
    for labels in label_list:
        assert parsed.matches(labels) is reference_matches(model, labels)


@settings(max_examples=examples(300))
@given(
    st.one_of(
        api_selectors.map(compile_selector),
        selector_strings().map(lambda case: parse_selector_string(case[0])),
    ),
    st.lists(label_sets, min_size=1, max_size=8),
)
def test_to_string_round_trips(selector, label_list):
    again = parse_selector_string(selector.to_string())
    assert again == selector
    for labels in label_list:
        assert again.matches(labels) is selector.matches(labels)


@pytest.mark.parametrize("outcome", [True, False])
def test_generators_are_not_vacuous(outcome):
    # The small alphabets must yield non-trivial selectors that both match and miss.
    find(
        st.tuples(api_selectors, label_sets),
        lambda c: bool(dict_model(c[0])) and reference_matches(dict_model(c[0]), c[1]) is outcome,
    )
    find(
        st.tuples(selector_strings(), label_sets),
        lambda c: bool(c[0][1]) and reference_matches(c[0][1], c[1]) is outcome,
    )
