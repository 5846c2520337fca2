"""Kubernetes name, label and duration syntax.

Mirrors ``k8s.io/apimachinery/pkg/util/validation`` (regexes, limits and message wording)
and ``metav1`` label/annotation validation, returning ``FieldError`` causes.
"""

from __future__ import annotations

import re
from typing import Any

from . import errors
from .errors import FieldError

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
LABEL_VALUE_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)

# Go's regexp anchors at end-of-text; Python's "$" also matches before a trailing "\n",
# so every check uses fullmatch instead.
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)


def _blen(value: str) -> int:
    # Go's len() counts UTF-8 bytes.
    return len(value.encode("utf-8", "surrogatepass"))


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    # Go builds "'a', " + " or " + "'b', ", hence the double space upstream messages carry.
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _subdomain_syntax(value: str) -> list[str]:
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return []
    return [regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")]


def _label_syntax(value: str) -> list[str]:
    if _DNS1123_LABEL_RE.fullmatch(value):
        return []
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return ["must not contain dots"]
    return [regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc")]


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if _blen(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    return errs + _subdomain_syntax(value)


def dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if _blen(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    return errs + _label_syntax(value)


def label_value_errors(value: str) -> list[str]:
    errs = []
    if _blen(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def qualified_name_errors(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _blen(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def invalid_value(path: str, value: object, message: str) -> FieldError:
    """field.Invalid's body: ``Invalid value: "<value>": <detail>``."""
    return errors.invalid(path, f'Invalid value: "{value}": {message}')


def type_invalid(path: str, value: object, expected: str) -> FieldError:
    shown = type(value).__name__ if value is not None else "null"
    return FieldError(path, errors.TYPE_INVALID, f'Invalid value: "{shown}": expected {expected}')


def validate_name(value: Any, path: str, *, label: bool = False) -> list[FieldError]:
    """metadata.name: a DNS-1123 subdomain, or a DNS-1123 label when ``label``."""
    if value is None or value == "":
        return [errors.required(path, "Required value: name is required")]
    if not isinstance(value, str):
        return [type_invalid(path, value, "string")]
    limit = DNS1123_LABEL_MAX_LENGTH if label else DNS1123_SUBDOMAIN_MAX_LENGTH
    errs = []
    if _blen(value) > limit:
        errs.append(errors.too_long(path, limit))
    syntax = _label_syntax(value) if label else _subdomain_syntax(value)
    errs.extend(invalid_value(path, value, m) for m in syntax)
    return errs


def _string_map(value: Any, path: str) -> list[FieldError]:
    if not isinstance(value, dict):
        return [type_invalid(path, value, "object")]
    return [
        type_invalid(f"{path}[{k}]", v, "string")
        for k, v in value.items()
        if not isinstance(k, str) or not isinstance(v, str)
    ]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """metav1 ValidateLabels: qualified-name keys, label-value values."""
    if labels is None:
        return []
    errs = _string_map(labels, path)
    if errs:
        return errs
    for key, value in labels.items():
        errs.extend(invalid_value(path, key, m) for m in qualified_name_errors(key))
        errs.extend(invalid_value(f"{path}[{key}]", value, m) for m in label_value_errors(value))
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    """Qualified-name keys (case-insensitive, as upstream) and a 256 KiB total size."""
    if annotations is None:
        return []
    errs = _string_map(annotations, path)
    if errs:
        return errs
    for key in annotations:
        errs.extend(invalid_value(path, key, m) for m in qualified_name_errors(key.lower()))
    size = sum(_blen(k) + _blen(v) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(errors.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


# Nanoseconds per unit, as Go's time package.
_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_DIGITS = "0123456789"  # str.isdigit() would accept non-ASCII digits
_MAX_NS = (1 << 63) - 1  # Go's Duration is an int64 of nanoseconds


def parse_duration_ns(value: str) -> int:
    """Go's time.ParseDuration, returning integer nanoseconds."""
    if not isinstance(value, str):
        raise ValueError(f"time: invalid duration {value!r}")
    s, orig = value, value
    negative = False
    if s and s[0] in "+-":
        negative, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f'time: invalid duration "{orig}"')
    total = 0
    while s:
        i = 0
        while i < len(s) and s[i] in _DIGITS:
            i += 1
        whole, s = s[:i], s[i:]
        frac = ""
        if s.startswith("."):
            s = s[1:]
            i = 0
            while i < len(s) and s[i] in _DIGITS:
                i += 1
            frac, s = s[:i], s[i:]
            if not whole and not frac:
                raise ValueError(f'time: invalid duration "{orig}"')
        elif not whole:
            raise ValueError(f'time: invalid duration "{orig}"')
        i = 0
        while i < len(s) and s[i] != "." and s[i] not in _DIGITS:
            i += 1
        unit, s = s[:i], s[i:]
        if not unit:
            raise ValueError(f'time: missing unit in duration "{orig}"')
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{orig}"')
        scale = _UNITS[unit]
        # Fractions truncate to whole nanoseconds, as Go does.
        part = int(whole or "0") * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
        total += part
        if total > _MAX_NS + (1 if negative else 0):
            raise ValueError(f'time: invalid duration "{orig}"')
    return -total if negative else total


def parse_duration(value: str) -> float:
    """Go-style duration (``30s``, ``1h30m``, ``250ms``, ``1.5h``) in seconds."""
    return parse_duration_ns(value) / 1_000_000_000


def validate_duration(value: Any, path: str, *, allow_negative: bool = False) -> list[FieldError]:
    if value is None or value == "":
        return [errors.required(path)]
    if not isinstance(value, str):
        return [type_invalid(path, value, "string")]
    try:
        ns = parse_duration_ns(value)
    except ValueError as exc:
        return [invalid_value(path, value, f"{exc} (e.g. '30s', '5m', '1h30m')")]
    if ns < 0 and not allow_negative:
        return [invalid_value(path, value, "must be greater than or equal to 0")]
    return []
