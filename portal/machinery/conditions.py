"""metav1.Condition helpers: set/get/remove and validation, as ``k8s.io/apimachinery/pkg/api/meta``.

Conditions are plain dicts in their JSON shape
(type, status, observedGeneration, lastTransitionTime, reason, message).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from . import errors
from .errors import FieldError
from .validation import invalid_value, qualified_name_errors, type_invalid

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
STATUSES = (TRUE, FALSE, UNKNOWN)

CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
# "\Z", not "$": Python's "$" also matches before a trailing newline, Go's does not.
CONDITION_REASON_RE = re.compile(f"^{CONDITION_REASON_FMT}\\Z")
CONDITION_REASON_MSG = (
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'"
)
# The pattern and limits metav1.Condition's OpenAPI schema carries.
CONDITION_TYPE_RE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])\Z"
)
MAX_TYPE_LENGTH = 316
MAX_REASON_LENGTH = 1024
MAX_MESSAGE_LENGTH = 32 * 1024

_RFC3339_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})"
)


def _blen(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def format_time(dt: datetime) -> str:
    """metav1.Time's wire form: RFC 3339 in UTC, whole seconds."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        # A naive datetime is ambiguous (local or UTC?); refuse rather than guess.
        raise ValueError("format_time needs a timezone-aware datetime")
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> datetime:
    """Parse RFC 3339 (``Z`` or ``±HH:MM``, optional fraction) to an aware UTC datetime."""
    # fullmatch, not fromisoformat: the latter accepts non-RFC 3339 forms (dates, "20240101").
    m = _RFC3339_RE.fullmatch(s) if isinstance(s, str) else None
    if not m:
        raise ValueError(f"not an RFC 3339 time: {s!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    micro = int((m.group(7) or ".0")[1:7].ljust(6, "0"))
    zone = m.group(8)
    if zone == "Z":
        offset = timedelta(0)
    else:
        sign = -1 if zone[0] == "-" else 1
        offset = sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    dt = datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    return dt - offset


def time_or_none(value: Any) -> datetime | None:
    """A time as stored in a status (an RFC 3339 string, or already a datetime), or None when
    it is absent or malformed: for readers that show or compare it, never for validation."""
    if isinstance(value, datetime):
        return value
    if not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _type_errors(ctype: str) -> list[str]:
    msgs = qualified_name_errors(ctype)
    if _blen(ctype) > MAX_TYPE_LENGTH:
        msgs.append(f"must be no more than {MAX_TYPE_LENGTH} characters")
    return msgs


def get_condition(conditions: list[dict[str, Any]] | None, type: str) -> dict[str, Any] | None:
    """The condition of that type (the stored dict itself), or None."""
    for cond in conditions or ():
        if isinstance(cond, dict) and cond.get("type") == type:
            return cond
    return None


def is_condition_true(conditions: list[dict[str, Any]] | None, type: str) -> bool:
    cond = get_condition(conditions, type)
    return cond is not None and cond.get("status") == TRUE


def remove_condition(conditions: list[dict[str, Any]] | None, type: str) -> list[dict[str, Any]]:
    return [
        dict(c) for c in conditions or () if not (isinstance(c, dict) and c.get("type") == type)
    ]


def set_condition(
    conditions: list[dict[str, Any]] | None,
    *,
    type: str,
    status: str,
    reason: str,
    message: str = "",
    observed_generation: int = 0,
    now: datetime,
) -> list[dict[str, Any]]:
    """meta.SetStatusCondition on a copy: lastTransitionTime moves only when status changes."""
    # Bad arguments here are programmer errors, not user input: raise.
    if status not in STATUSES:
        raise ValueError(f"condition status must be one of {STATUSES}, not {status!r}")
    if not isinstance(reason, str) or not CONDITION_REASON_RE.fullmatch(reason):
        raise ValueError(f"invalid condition reason {reason!r}: {CONDITION_REASON_MSG}")
    if _blen(reason) > MAX_REASON_LENGTH:
        raise ValueError(f"condition reason longer than {MAX_REASON_LENGTH}")
    if not isinstance(type, str) or not type or _type_errors(type):
        raise ValueError(f"invalid condition type {type!r}")
    if not isinstance(observed_generation, int) or observed_generation < 0:
        raise ValueError("observed_generation must be a non-negative integer")
    stamp = format_time(now)
    result = [dict(c) for c in conditions or ()]
    new = {
        "type": type,
        "status": status,
        "observedGeneration": observed_generation,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }
    for i, old in enumerate(result):
        if old.get("type") != type:
            continue
        if old.get("status") == status and old.get("lastTransitionTime"):
            new["lastTransitionTime"] = old["lastTransitionTime"]
        result[i] = new
        return result
    result.append(new)
    return result


def with_conditions(
    status: dict[str, Any] | None,
    now: datetime,
    generation: int,
    conditions: dict[str, tuple[str, str, str]],
) -> dict[str, Any]:
    """A copy of ``status`` with each ``type -> (status, reason, message)`` condition set (as
    ``set_condition``) and ``observedGeneration``: the bookkeeping every status writer does."""
    new = dict(status or {})
    current = list(new.get("conditions") or [])
    for ctype, (cstatus, reason, message) in conditions.items():
        current = set_condition(
            current,
            type=ctype,
            status=cstatus,
            reason=reason,
            message=message,
            observed_generation=generation,
            now=now,
        )
    new["conditions"] = current
    new["observedGeneration"] = generation
    return new


def validate_conditions(conditions: Any, path: str, *, max_items: int = 16) -> list[FieldError]:
    """metav1 ValidateConditions plus the list-map rules (unique type, max items)."""
    if conditions is None:
        return []
    if not isinstance(conditions, list):
        return [type_invalid(path, conditions, "array")]
    errs: list[FieldError] = []
    if len(conditions) > max_items:
        errs.append(errors.too_many(path, len(conditions), max_items))
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        p = f"{path}[{i}]"
        if not isinstance(cond, dict):
            errs.append(type_invalid(p, cond, "object"))
            continue
        errs.extend(_validate_condition(cond, p))
        ctype = cond.get("type")
        if isinstance(ctype, str) and ctype:
            if ctype in seen:
                errs.append(errors.duplicate(f"{p}.type", ctype))
            seen.add(ctype)
    return errs


def _str_field(cond: dict[str, Any], name: str, p: str, errs: list[FieldError]) -> str | None:
    value = cond.get(name)
    if value is None or value == "":
        errs.append(errors.required(f"{p}.{name}", "Required value: must be set"))
        return None
    if not isinstance(value, str):
        errs.append(type_invalid(f"{p}.{name}", value, "string"))
        return None
    return value


def _validate_condition(cond: dict[str, Any], p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ctype = _str_field(cond, "type", p, errs)
    if ctype is not None:
        errs.extend(invalid_value(f"{p}.type", ctype, m) for m in qualified_name_errors(ctype))
        if _blen(ctype) > MAX_TYPE_LENGTH:
            errs.append(errors.too_long(f"{p}.type", MAX_TYPE_LENGTH))
    status = _str_field(cond, "status", p, errs)
    if status is not None and status not in STATUSES:
        errs.append(errors.not_supported(f"{p}.status", status, STATUSES))
    reason = _str_field(cond, "reason", p, errs)
    if reason is not None:
        if not CONDITION_REASON_RE.fullmatch(reason):
            errs.append(invalid_value(f"{p}.reason", reason, CONDITION_REASON_MSG))
        if _blen(reason) > MAX_REASON_LENGTH:
            errs.append(errors.too_long(f"{p}.reason", MAX_REASON_LENGTH))
    ltt = _str_field(cond, "lastTransitionTime", p, errs)
    if ltt is not None:
        try:
            parse_time(ltt)
        except ValueError:
            errs.append(invalid_value(f"{p}.lastTransitionTime", ltt, "must be an RFC 3339 time"))
    message = cond.get("message", "")
    if message is None:
        message = ""
    if not isinstance(message, str):
        errs.append(type_invalid(f"{p}.message", message, "string"))
    elif _blen(message) > MAX_MESSAGE_LENGTH:
        errs.append(errors.too_long(f"{p}.message", MAX_MESSAGE_LENGTH))
    gen = cond.get("observedGeneration", 0)
    if gen is None:
        gen = 0
    if not isinstance(gen, int) or isinstance(gen, bool):
        errs.append(type_invalid(f"{p}.observedGeneration", gen, "integer"))
    elif gen < 0:
        errs.append(
            invalid_value(f"{p}.observedGeneration", gen, "must be greater than or equal to zero")
        )
    return errs
