"""Kubernetes ``Status`` errors.

Every failure the API reports is one of these; ``to_status()`` gives the wire shape
(``kind: Status``, ``reason``, ``details.causes[].field``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict


class Cause(TypedDict):
    """A ``details.causes[]`` entry on the wire."""

    field: str
    reason: str
    message: str


class StatusDetails(TypedDict, total=False):
    name: str
    group: str
    kind: str
    causes: list[Cause]


class Status(TypedDict):
    """metav1.Status as rendered by ``StatusError.to_status``."""

    kind: str
    apiVersion: str
    metadata: dict[str, Any]
    status: str
    message: str
    reason: str
    code: int
    details: NotRequired[StatusDetails]


@dataclass(frozen=True)
class FieldError:
    """One cause of an Invalid/BadRequest status: the JSON path at fault and why."""

    field: str
    reason: str  # a metav1.CauseType, e.g. FieldValueRequired, FieldValueInvalid
    message: str

    def as_cause(self) -> Cause:
        return {"field": self.field, "reason": self.reason, "message": self.message}


# metav1.CauseType values used here.
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
FORBIDDEN = "FieldValueForbidden"
TYPE_INVALID = "FieldValueTypeInvalid"
NOT_FOUND = "FieldValueNotFound"


def required(path: str, message: str = "Required value") -> FieldError:
    return FieldError(path, REQUIRED, message)


def invalid(path: str, message: str) -> FieldError:
    return FieldError(path, INVALID, message)


def not_supported(path: str, value: object, supported: Iterable[object]) -> FieldError:
    options = ", ".join(f'"{s}"' for s in supported)
    return FieldError(
        path, NOT_SUPPORTED, f'Unsupported value: "{value}": supported values: {options}'
    )


def forbidden(path: str, message: str) -> FieldError:
    return FieldError(path, FORBIDDEN, message)


def field_not_found(path: str, message: str) -> FieldError:
    return FieldError(path, NOT_FOUND, message)


def too_long(path: str, limit: int) -> FieldError:
    return FieldError(path, TOO_LONG, f"Too long: may not be more than {limit} bytes")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    return FieldError(path, TOO_MANY, f"Too many: {actual}: must have at most {limit} items")


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(path, DUPLICATE, f'Duplicate value: "{value}"')


@dataclass
class StatusError(Exception):
    """An API failure carried up to the view layer and rendered as a metav1.Status."""

    code: int
    reason: str
    message: str
    kind: str = ""
    group: str = ""
    name: str = ""
    causes: list[FieldError] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_status(self) -> Status:
        details: StatusDetails = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.as_cause() for c in self.causes]
        status: Status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            status["details"] = details
        return status


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(plural, group)} "{name}" not found',
        kind=plural,
        group=group,
        name=name,
    )


def already_exists(plural: str, group: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(plural, group)} "{name}" already exists',
        kind=plural,
        group=group,
        name=name,
    )


def conflict(plural: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}',
        kind=plural,
        group=group,
        name=name,
    )


def invalid_object(kind: str, group: str, name: str, causes: list[FieldError]) -> StatusError:
    summary = ", ".join(f"{c.field}: {c.message}" for c in causes)
    return StatusError(
        422,
        "Invalid",
        f'{kind}.{group} "{name}" is invalid: {summary}'
        if group
        else f'{kind} "{name}" is invalid: {summary}',
        kind=kind,
        group=group,
        name=name,
        causes=list(causes),
    )


def bad_request(message: str, causes: list[FieldError] | None = None) -> StatusError:
    return StatusError(400, "BadRequest", message, causes=list(causes or []))


def forbidden_status(
    message: str, plural: str = "", group: str = "", name: str = ""
) -> StatusError:
    return StatusError(403, "Forbidden", message, kind=plural, group=group, name=name)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def read_only(plural: str, group: str) -> StatusError:
    """A write to a kind the API only reads (its rows are kept by others)."""
    resource = f"{plural}.{group}" if group else plural
    return StatusError(
        405,
        "MethodNotAllowed",
        f"{resource} are read-only: only their providers write them, "
        "and the API serves get and list",
        kind=plural,
        group=group,
    )
