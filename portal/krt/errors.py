"""What can go wrong talking to the portal, as exceptions a user reads in one line.

The CLI prints ``error: <message>`` and exits with ``exit_code``; the SDK raises the typed ones
(``InvokeError`` and its kinds, ``NotReady``, ``FunctionFailed``) so a caller can tell a full
function (429) from a broken one."""

from __future__ import annotations

import json


class KrtError(Exception):
    """A failure reported as one line; ``exit_code`` is the CLI's exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ApiError(KrtError):
    """The API answered with an error: ``status`` the HTTP code, ``reason`` the Status
    reason (NotFound, Invalid, Forbidden, ...), ``message`` the Status message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class NotReady(KrtError):
    """A function Run did not become Ready in time."""


class FunctionFailed(KrtError):
    """A function Run ended (Failed, Timeout, Cancelled) instead of serving; ``phase`` and
    the Run's message say why."""

    def __init__(self, name: str, phase: str, message: str) -> None:
        super().__init__(f'Run "{name}" is {phase}' + (f": {message}" if message else ""))
        self.name = name
        self.phase = phase


class InvokeError(KrtError):
    """An invocation failed: ``code`` the HTTP status (0: the endpoint was not reached),
    ``reason`` the Status reason, ``message`` the Status message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class TooManyRequests(InvokeError):
    """429: the function is at its concurrency limit; the caller decides whether to retry."""


def status_of(code: int, body: bytes, fallback_reason: str = "") -> tuple[str, str]:
    """(reason, message) of an error response: a Kubernetes Status' own, else the HTTP
    reason and the first line of the body."""
    try:
        status = json.loads(body.decode("utf-8", "replace")) if body else None
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status.get("reason") or fallback_reason), " ".join(
            str(status["message"]).split()
        )
    text = body.decode("utf-8", "replace").strip().splitlines()[:1] if body else []
    detail = f": {text[0][:200]}" if text else ""
    return fallback_reason, f"the server answered {code} {fallback_reason}".rstrip() + detail


def api_error(code: int, body: bytes, fallback_reason: str = "") -> ApiError:
    reason, message = status_of(code, body, fallback_reason)
    return ApiError(code, reason, message)


def invoke_error(code: int, body: bytes, fallback_reason: str = "") -> InvokeError:
    reason, message = status_of(code, body, fallback_reason)
    kind = TooManyRequests if code == 429 else InvokeError
    return kind(code, reason, message)
