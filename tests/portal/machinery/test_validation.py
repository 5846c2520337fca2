"""Name, label, annotation and duration syntax (portal.machinery.validation)."""

from __future__ import annotations

import pytest

from portal.machinery import errors
from portal.machinery.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    parse_duration,
    qualified_name_errors,
    validate_annotations,
    validate_duration,
    validate_labels,
    validate_name,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


# --- raw apimachinery checks --------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        ("a", []),
        ("0", []),
        ("example.com", []),
        ("a-b.c-d.e", []),
        ("a" * 253, []),  # at bound; per-label length is not checked for subdomains
        ("a" * 254, ["must be no more than 253 characters"]),
        ("A" * 254, ["must be no more than 253 characters", SUBDOMAIN_MSG]),
        ("", [SUBDOMAIN_MSG]),
        ("Example", [SUBDOMAIN_MSG]),
        ("-a", [SUBDOMAIN_MSG]),
        ("a-", [SUBDOMAIN_MSG]),
        (".a", [SUBDOMAIN_MSG]),
        ("a.", [SUBDOMAIN_MSG]),
        ("a..b", [SUBDOMAIN_MSG]),
        ("a_b", [SUBDOMAIN_MSG]),
        ("a\n", [SUBDOMAIN_MSG]),  # Python's "$" would accept this; Go's does not
        ("é", [SUBDOMAIN_MSG]),
    ],
)
def test_dns1123_subdomain_errors(value, expected):
    assert dns1123_subdomain_errors(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("a", []),
        ("my-name", []),
        ("123-abc", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("a.b", ["must not contain dots"]),
        ("My-name", [LABEL_MSG]),
        ("-a", [LABEL_MSG]),
        ("a-", [LABEL_MSG]),
        ("a_b", [LABEL_MSG]),
        ("", [LABEL_MSG]),
        ("a\n", [LABEL_MSG]),
    ],
)
def test_dns1123_label_errors(value, expected):
    assert dns1123_label_errors(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("", []),
        ("MyValue", []),
        ("my_value", []),
        ("12345", []),
        ("a.b-c_D", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("-a", [LABEL_VALUE_MSG]),
        ("a_", [LABEL_VALUE_MSG]),
        (".a", [LABEL_VALUE_MSG]),
        ("a b", [LABEL_VALUE_MSG]),
        ("a/b", [LABEL_VALUE_MSG]),
        ("a\n", [LABEL_VALUE_MSG]),
    ],
)
def test_label_value_errors(value, expected):
    assert label_value_errors(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("MyName", []),
        ("my.name", []),
        ("123-abc", []),
        ("a", []),
        ("example.com/MyName", []),
        ("app.kubernetes.io/name", []),
        ("a" * 63, []),
        ("p/" + "a" * 63, []),
        ("a" * 253 + "/b", []),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        ("-a", [NAME_PART_MSG]),
        ("a_", [NAME_PART_MSG]),
        ("a b", [NAME_PART_MSG]),
        ("a\n", [NAME_PART_MSG]),
        ("", ["name part must be non-empty", NAME_PART_MSG]),
        ("a/", ["name part must be non-empty", NAME_PART_MSG]),
        ("/a", ["prefix part must be non-empty"]),
        ("Example.com/a", ["prefix part " + SUBDOMAIN_MSG]),
        ("a" * 254 + "/b", ["prefix part must be no more than 253 characters"]),
    ],
)
def test_qualified_name_errors(value, expected):
    assert qualified_name_errors(value) == expected


def test_qualified_name_with_two_slashes():
    [msg] = qualified_name_errors("a/b/c")
    assert msg.startswith("a qualified name must consist of alphanumeric characters")
    assert msg.endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")


# --- FieldError wrappers ------------------------------------------------------------------


def reasons(errs):
    return [(e.field, e.reason) for e in errs]


@pytest.mark.parametrize(
    "value, label, expected",
    [
        ("my-app", False, []),
        ("my.app", False, []),
        ("a" * 253, False, []),
        ("a" * 254, False, [("metadata.name", errors.TOO_LONG)]),
        ("", False, [("metadata.name", errors.REQUIRED)]),
        (None, False, [("metadata.name", errors.REQUIRED)]),
        (7, False, [("metadata.name", errors.TYPE_INVALID)]),
        ("My_App", False, [("metadata.name", errors.INVALID)]),
        ("A" * 254, False, [("metadata.name", errors.TOO_LONG), ("metadata.name", errors.INVALID)]),
        ("my-app", True, []),
        ("a" * 63, True, []),
        ("a" * 64, True, [("metadata.name", errors.TOO_LONG)]),
        ("my.app", True, [("metadata.name", errors.INVALID)]),
        ("", True, [("metadata.name", errors.REQUIRED)]),
    ],
)
def test_validate_name(value, label, expected):
    assert reasons(validate_name(value, "metadata.name", label=label)) == expected


def test_validate_name_messages():
    [err] = validate_name("my.app", "metadata.name", label=True)
    assert err.message == 'Invalid value: "my.app": must not contain dots'
    [err] = validate_name("a" * 64, "metadata.name", label=True)
    assert "63" in err.message


@pytest.mark.parametrize(
    "labels, expected",
    [
        (None, []),
        ({}, []),
        ({"app": "web", "app.kubernetes.io/name": "portal", "empty": ""}, []),
        ({"k": "v" * 63}, []),
        ({"k": "v" * 64}, [("metadata.labels[k]", errors.INVALID)]),
        ({"k": "-v"}, [("metadata.labels[k]", errors.INVALID)]),
        ({"-k": "v"}, [("metadata.labels", errors.INVALID)]),
        ({"a/b/c": "v"}, [("metadata.labels", errors.INVALID)]),
        ({"k" * 64: "v"}, [("metadata.labels", errors.INVALID)]),
        ({"k": 1}, [("metadata.labels[k]", errors.TYPE_INVALID)]),
        ({1: "v"}, [("metadata.labels[1]", errors.TYPE_INVALID)]),
        (["app"], [("metadata.labels", errors.TYPE_INVALID)]),
        ("app=web", [("metadata.labels", errors.TYPE_INVALID)]),
    ],
)
def test_validate_labels(labels, expected):
    assert reasons(validate_labels(labels, "metadata.labels")) == expected


def test_validate_labels_messages_name_the_key_and_value():
    [err] = validate_labels({"-k": "v"}, "metadata.labels")
    assert err.message.startswith('Invalid value: "-k": name part must consist')
    [err] = validate_labels({"k": "bad value"}, "metadata.labels")
    assert err.message.startswith('Invalid value: "bad value": a valid label must be')


@pytest.mark.parametrize(
    "annotations, expected",
    [
        (None, []),
        ({"example.com/Note": "anything at all: {}\n"}, []),
        ({"Example.COM/note": "x"}, []),  # keys are checked lower-cased, as upstream
        ({"-note": "x"}, [("metadata.annotations", errors.INVALID)]),
        ({"a/b/c": "x"}, [("metadata.annotations", errors.INVALID)]),
        ({"k": 1}, [("metadata.annotations[k]", errors.TYPE_INVALID)]),
        ([], [("metadata.annotations", errors.TYPE_INVALID)]),
        ({"k": "v" * (TOTAL_ANNOTATION_SIZE_LIMIT - 1)}, []),  # at bound: key + value
        ({"k": "v" * TOTAL_ANNOTATION_SIZE_LIMIT}, [("metadata.annotations", errors.TOO_LONG)]),
        # The limit is on UTF-8 bytes, as Go's len().
        (
            {"k": "é" * (TOTAL_ANNOTATION_SIZE_LIMIT // 2)},
            [("metadata.annotations", errors.TOO_LONG)],
        ),
    ],
)
def test_validate_annotations(annotations, expected):
    assert reasons(validate_annotations(annotations, "metadata.annotations")) == expected


# --- durations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("0", 0.0),
        ("-0", 0.0),
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("250ms", 0.25),
        ("1us", 1e-6),
        ("1\u00b5s", 1e-6),
        ("1\u03bcs", 1e-6),
        ("10ns", 1e-8),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("+2m", 120.0),
        ("-1.5s", -1.5),
        ("1h1m1s1ms", 3661.001),
        ("2562047h47m16.854775807s", 9223372036.854775807),  # Go's max Duration
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "s",
        "30",
        "1.5",
        ".s",
        "1d",
        "1hh",
        "1h 30m",
        " 1s",
        "1s ",
        "--1s",
        "1S",
        "١s",
        "2562047h47m16.854775808s",
        "9999999999h",
        None,
        30,
    ],
)
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("30s", []),
        ("0", []),
        ("1h30m", []),
        (None, [("spec.timeout", errors.REQUIRED)]),
        ("", [("spec.timeout", errors.REQUIRED)]),
        (30, [("spec.timeout", errors.TYPE_INVALID)]),
        ("30", [("spec.timeout", errors.INVALID)]),
        ("1d", [("spec.timeout", errors.INVALID)]),
        ("-5s", [("spec.timeout", errors.INVALID)]),
    ],
)
def test_validate_duration(value, expected):
    assert reasons(validate_duration(value, "spec.timeout")) == expected


def test_validate_duration_allow_negative():
    assert validate_duration("-5s", "spec.offset", allow_negative=True) == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("30", 'time: missing unit in duration "30"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        (".s", 'time: invalid duration ".s"'),
    ],
)
def test_parse_duration_messages_match_go(text, message):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == message
