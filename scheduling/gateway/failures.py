"""What the gateway answers when an invocation does not succeed: a Kubernetes ``Status``
carrying the invocation ID (``details.invocationID``, and the header), and ``Retry-After``
when trying again may help."""

from __future__ import annotations

import json
from typing import Any

from portal.machinery.errors import FieldError, StatusError

# Kubernetes' StatusReasons for the codes the gateway answers (502 has none: ours)
REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class InvokeFailure(Exception):
    """An invocation's failure: the Status to answer, and the headers that go with it."""

    def __init__(
        self,
        status: StatusError,
        *,
        retry_after: int = 0,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(status.message)
        self.status = status
        self.retry_after = retry_after
        self.headers = headers

    @property
    def code(self) -> int:
        return self.status.code


def failure(
    code: int,
    message: str,
    *,
    reason: str = "",
    retry_after: int = 0,
    name: str = "",
    headers: tuple[tuple[bytes, bytes], ...] = (),
    causes: list[FieldError] | None = None,
) -> InvokeFailure:
    status = StatusError(
        code, reason or REASONS[code], message, name=name, causes=list(causes or [])
    )
    if name:
        status.kind = "runs"
    if name:
        status.group = _group()
    return InvokeFailure(status, retry_after=retry_after, headers=headers)


def _group() -> str:
    from scheduling.kinds import GROUP

    return GROUP


def body(failed: InvokeFailure, invocation_id: str) -> bytes:
    status: dict[str, Any] = dict(failed.status.to_status())
    details: dict[str, Any] = dict(status.get("details") or {})
    details["invocationID"] = invocation_id
    if failed.retry_after:
        details["retryAfterSeconds"] = failed.retry_after
    status["details"] = details
    return json.dumps(status, separators=(",", ":")).encode()
