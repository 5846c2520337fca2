"""metav1.Condition helpers (portal.machinery.conditions)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone

import pytest

from portal.machinery import errors
from portal.machinery.conditions import (
    CONDITION_REASON_RE,
    CONDITION_TYPE_RE,
    format_time,
    get_condition,
    is_condition_true,
    parse_time,
    remove_condition,
    set_condition,
    validate_conditions,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def cond(**overrides):
    base = {
        "type": "Ready",
        "status": "True",
        "observedGeneration": 1,
        "lastTransitionTime": "2024-05-01T12:00:00Z",
        "reason": "AllGood",
        "message": "",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


def reasons(errs):
    return [(e.field, e.reason) for e in errs]


# --- time helpers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dt, text",
    [
        (T0, "2024-05-01T12:00:00Z"),
        (T0.replace(microsecond=999_999), "2024-05-01T12:00:00Z"),  # whole seconds
        (datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))), "2024-05-01T12:00:00Z"),
    ],
)
def test_format_time(dt, text):
    assert format_time(dt) == text


def test_format_time_rejects_naive():
    with pytest.raises(ValueError):
        format_time(datetime(2024, 5, 1, 12, 0))


@pytest.mark.parametrize(
    "text, dt",
    [
        ("2024-05-01T12:00:00Z", T0),
        ("2024-05-01T14:00:00+02:00", T0),
        ("2024-05-01T10:30:00-01:30", T0),
        ("2024-05-01T12:00:00.5Z", T0.replace(microsecond=500_000)),
        ("2024-05-01T12:00:00.1234567Z", T0.replace(microsecond=123_456)),
    ],
)
def test_parse_time(text, dt):
    parsed = parse_time(text)
    assert parsed == dt and parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2024-05-01",
        "2024-05-01T12:00:00",
        "2024-05-01 12:00:00Z",
        "20240501T120000Z",
        "2024-13-01T12:00:00Z",
        "2024-05-01T12:00:00Z\n",
        "2024-05-01t12:00:00z",
        None,
    ],
)
def test_parse_time_rejects(text):
    with pytest.raises(ValueError):
        parse_time(text)


def test_time_round_trip():
    assert parse_time(format_time(T1)) == T1


# --- set/get/remove -----------------------------------------------------------------------


def test_set_condition_appends_new_type_at_end():
    existing = [cond(type="Scheduled")]
    out = set_condition(
        existing,
        type="Ready",
        status="False",
        reason="Waiting",
        message="pods pending",
        observed_generation=3,
        now=T1,
    )
    assert [c["type"] for c in out] == ["Scheduled", "Ready"]
    assert out[1] == {
        "type": "Ready",
        "status": "False",
        "observedGeneration": 3,
        "lastTransitionTime": "2024-05-01T12:05:00Z",
        "reason": "Waiting",
        "message": "pods pending",
    }
    assert existing == [cond(type="Scheduled")]  # input untouched


def test_set_condition_from_none():
    out = set_condition(None, type="Ready", status="Unknown", reason="Init", now=T0)
    assert out == [cond(status="Unknown", reason="Init", observedGeneration=0)]


def test_set_condition_keeps_transition_time_when_status_unchanged():
    before = [cond(type="Scheduled"), cond(), cond(type="Done", status="False")]
    snapshot = copy.deepcopy(before)
    out = set_condition(
        before,
        type="Ready",
        status="True",
        reason="StillGood",
        message="new message",
        observed_generation=7,
        now=T1,
    )
    assert out[1]["lastTransitionTime"] == "2024-05-01T12:00:00Z"
    assert (out[1]["reason"], out[1]["message"], out[1]["observedGeneration"]) == (
        "StillGood",
        "new message",
        7,
    )
    assert [c["type"] for c in out] == ["Scheduled", "Ready", "Done"]  # replaced in place
    assert before == snapshot and out is not before


def test_set_condition_moves_transition_time_when_status_flips():
    out = set_condition([cond()], type="Ready", status="False", reason="Broken", now=T1)
    assert out[0]["lastTransitionTime"] == "2024-05-01T12:05:00Z"
    assert out[0]["status"] == "False"
    back = set_condition(out, type="Ready", status="True", reason="Fixed", now=T1 + timedelta(1))
    assert back[0]["lastTransitionTime"] == "2024-05-02T12:05:00Z"


def test_set_condition_fills_missing_transition_time():
    out = set_condition(
        [cond(lastTransitionTime=...)], type="Ready", status="True", reason="AllGood", now=T1
    )
    assert out[0]["lastTransitionTime"] == "2024-05-01T12:05:00Z"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"status": "true"},
        {"status": "Yes"},
        {"reason": ""},
        {"reason": "1Bad"},
        {"reason": "Bad-Reason"},
        {"reason": "Bad:"},
        {"reason": "Bad\n"},
        {"reason": "A" * 1025},
        {"type": ""},
        {"type": "a/b/c"},
        {"observed_generation": -1},
    ],
)
def test_set_condition_rejects_programmer_errors(kwargs):
    args = {"type": "Ready", "status": "True", "reason": "Ok", "now": T0, **kwargs}
    with pytest.raises(ValueError):
        set_condition([], **args)


def test_set_condition_accepts_reason_at_bound():
    out = set_condition([], type="Ready", status="True", reason="A" * 1024, now=T0)
    assert len(out[0]["reason"]) == 1024


def test_get_is_true_remove():
    conds = [cond(type="Scheduled", status="False"), cond()]
    assert get_condition(conds, "Ready") is conds[1]
    assert get_condition(conds, "Missing") is None
    assert get_condition(None, "Ready") is None
    assert is_condition_true(conds, "Ready")
    assert not is_condition_true(conds, "Scheduled")
    assert not is_condition_true(conds, "Missing")
    assert not is_condition_true(None, "Ready")
    assert not is_condition_true([cond(status="Unknown")], "Ready")
    out = remove_condition(conds, "Scheduled")
    assert out == [cond()] and len(conds) == 2
    assert remove_condition(None, "Ready") == []
    assert remove_condition(conds, "Missing") == conds


# --- regexes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reason, ok",
    [
        ("A", True),
        ("AllGood", True),
        ("a_b,c:d", True),
        ("Ends_", True),
        ("R2", True),
        ("", False),
        ("1A", False),
        ("_A", False),
        ("A:", False),
        ("A,", False),
        ("A-B", False),
        ("A B", False),
        ("A\n", False),
    ],
)
def test_condition_reason_re(reason, ok):
    assert bool(CONDITION_REASON_RE.match(reason)) is ok


@pytest.mark.parametrize(
    "ctype, ok",
    [
        ("Ready", True),
        ("example.com/Ready", True),
        ("my.Type_1", True),
        ("-Ready", False),
        ("Example.com/Ready", False),
        ("a/b/c", False),
        ("Ready\n", False),
    ],
)
def test_condition_type_re(ctype, ok):
    assert bool(CONDITION_TYPE_RE.match(ctype)) is ok


# --- validate_conditions ------------------------------------------------------------------

P = "status.conditions"
TYPE_316 = "a" * 252 + "/" + "b" * 63
TYPE_317 = "a" * 253 + "/" + "b" * 63


@pytest.mark.parametrize(
    "conditions, expected",
    [
        (None, []),
        ([], []),
        ([cond(), cond(type="example.com/Scheduled", status="Unknown")], []),
        ([cond(observedGeneration=...), cond(type="B", message=...)], []),
        ("Ready", [(P, errors.TYPE_INVALID)]),
        (["Ready"], [(f"{P}[0]", errors.TYPE_INVALID)]),
        ([cond(type=...)], [(f"{P}[0].type", errors.REQUIRED)]),
        ([cond(type="")], [(f"{P}[0].type", errors.REQUIRED)]),
        ([cond(type=5)], [(f"{P}[0].type", errors.TYPE_INVALID)]),
        ([cond(type="-Ready")], [(f"{P}[0].type", errors.INVALID)]),
        ([cond(type="b" * 63)], []),
        ([cond(type="b" * 64)], [(f"{P}[0].type", errors.INVALID)]),
        ([cond(type=TYPE_316)], []),
        ([cond(type=TYPE_317)], [(f"{P}[0].type", errors.TOO_LONG)]),
        ([cond(status=...)], [(f"{P}[0].status", errors.REQUIRED)]),
        ([cond(status="true")], [(f"{P}[0].status", errors.NOT_SUPPORTED)]),
        ([cond(reason=...)], [(f"{P}[0].reason", errors.REQUIRED)]),
        ([cond(reason="")], [(f"{P}[0].reason", errors.REQUIRED)]),
        ([cond(reason="Bad-Reason")], [(f"{P}[0].reason", errors.INVALID)]),
        ([cond(reason="A" * 1024)], []),
        ([cond(reason="A" * 1025)], [(f"{P}[0].reason", errors.TOO_LONG)]),
        ([cond(lastTransitionTime=...)], [(f"{P}[0].lastTransitionTime", errors.REQUIRED)]),
        ([cond(lastTransitionTime="yesterday")], [(f"{P}[0].lastTransitionTime", errors.INVALID)]),
        ([cond(message="m" * 32768)], []),
        ([cond(message="m" * 32769)], [(f"{P}[0].message", errors.TOO_LONG)]),
        ([cond(message=["m"])], [(f"{P}[0].message", errors.TYPE_INVALID)]),
        ([cond(observedGeneration=0)], []),
        ([cond(observedGeneration=-1)], [(f"{P}[0].observedGeneration", errors.INVALID)]),
        ([cond(observedGeneration="1")], [(f"{P}[0].observedGeneration", errors.TYPE_INVALID)]),
        ([cond(), cond(type="B"), cond()], [(f"{P}[2].type", errors.DUPLICATE)]),
    ],
)
def test_validate_conditions(conditions, expected):
    assert reasons(validate_conditions(conditions, P)) == expected


@pytest.mark.parametrize(
    "count, max_items, expected",
    [
        (16, 16, []),
        (17, 16, [(P, errors.TOO_MANY)]),
        (3, 3, []),
        (4, 3, [(P, errors.TOO_MANY)]),
    ],
)
def test_validate_conditions_max_items(count, max_items, expected):
    conditions = [cond(type=f"T{i}") for i in range(count)]
    assert reasons(validate_conditions(conditions, P, max_items=max_items)) == expected


def test_validate_conditions_accepts_set_condition_output():
    out = set_condition(None, type="Ready", status="True", reason="Ok", now=T0)
    out = set_condition(
        out,
        type="example.com/Synced",
        status="False",
        reason="Pending",
        message="waiting",
        observed_generation=2,
        now=T1,
    )
    assert validate_conditions(out, P) == []
