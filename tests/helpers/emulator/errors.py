"""Errors the emulator answers, as the Kubernetes Status objects kube-apiserver sends."""

from __future__ import annotations

from typing import Any


class StatusError(Exception):
    """An API error: rendered as a ``Status`` with its HTTP code."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            status["details"] = self.details
        return status


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return details


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(group, plural)} "{name}" not found',
        _details(group, plural, name),
    )


def already_exists(group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str, why: str | None = None) -> StatusError:
    why = (
        why
        or "the object has been modified; please apply your changes to the latest version and try again"
    )
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


def bad_request(message: str, *, field: str | None = None) -> StatusError:
    details = {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]}
    return StatusError(400, "BadRequest", message, details if field else None)


def invalid(group: str, plural: str, name: str, field: str, message: str) -> StatusError:
    details = _details(group, plural, name)
    details["causes"] = [{"reason": "FieldValueRequired", "message": message, "field": field}]
    return StatusError(
        422,
        "Invalid",
        f'{_qualified(group, plural)} "{name}" is invalid: {field}: {message}',
        details,
    )


def expired(requested: int, oldest: int) -> StatusError:
    """What a watch from a compacted version answers (as an ERROR event, HTTP 200)."""
    return StatusError(410, "Expired", f"too old resource version: {requested} ({oldest})")
