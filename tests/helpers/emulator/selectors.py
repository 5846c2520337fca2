"""Label and field selectors as kube-apiserver parses and applies them on list and watch.

Labels: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists),
``!k`` (does not exist), comma-joined (all must hold). Fields: ``path=v``, ``path==v``,
``path!=v`` over the fields each resource supports (``FIELDS``); any other field is the
same 400 the API server answers (``field label not supported``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import bad_request

Predicate = Callable[[Mapping[str, Any]], bool]

_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
# (group, plural) -> the extra fields the API server indexes for field selectors
FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): (
        "status.phase",
        "spec.nodeName",
        "spec.serviceAccountName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "status.podIP",
    ),
    ("", "namespaces"): ("status.phase",),
    ("", "secrets"): ("type",),
    ("", "events"): (
        "involvedObject.kind",
        "involvedObject.name",
        "involvedObject.namespace",
        "involvedObject.uid",
        "reason",
        "type",
    ),
    ("batch", "jobs"): ("status.successful",),
}
_LABEL_OPERATOR = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(==|=|!=)\s*(.*?)|)\s*$")
_LABEL_SET = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s+(in|notin)\s+\((.*)\)\s*$")


def _split(selector: str) -> list[str]:
    """Top-level comma split: commas inside ``in (a,b)`` belong to their requirement."""
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _label_requirement(text: str) -> Predicate:
    set_match = _LABEL_SET.match(text)
    if set_match:
        key, operator, values_text = set_match.groups()
        values = {value.strip() for value in values_text.split(",") if value.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    match = _LABEL_OPERATOR.match(text)
    if not match or (match.group(1) and match.group(3)):
        raise bad_request(f"unable to parse requirement: {text.strip()!r}", field="labelSelector")
    negated, key, operator, value = match.groups()
    if operator is None:
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    if operator == "!=":
        return lambda labels: labels.get(key) != value
    return lambda labels: labels.get(key) == value


def label_selector(selector: str | None) -> Predicate:
    """A predicate over an object's ``metadata.labels`` (everything matches an empty one)."""
    requirements = [_label_requirement(part) for part in _split(selector or "")]

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(selector: str | None, group: str, plural: str) -> Predicate:
    """A predicate over the fields the resource supports; 400 for any other field."""
    supported = _COMMON_FIELDS + FIELDS.get((group, plural), ())
    requirements: list[tuple[str, bool, str]] = []
    for part in _split(selector or ""):
        match = re.match(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not match:
            raise bad_request(f"invalid selector: {part.strip()!r}", field="fieldSelector")
        path, operator, value = match.groups()
        if path not in supported:
            raise bad_request(f"field label not supported: {path}", field="fieldSelector")
        requirements.append((path, operator != "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all(
            (field_value(obj, path) == value) is equal for path, equal, value in requirements
        )

    return matches
