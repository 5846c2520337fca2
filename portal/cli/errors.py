"""``CLIError``: a failure carrying the lines kubectl would print for it."""

from __future__ import annotations

from portal.machinery.errors import StatusError


class CLIError(Exception):
    """A failure to report: its lines go to stderr (``error: ...`` for client-side ones)."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = list(lines)

    @classmethod
    def client(cls, message: str) -> CLIError:
        return cls(f"error: {message}")

    @classmethod
    def from_status(cls, exc: StatusError, doing: str = "", source: str = "") -> CLIError:
        return cls(*status_lines(exc, doing, source))


def status_lines(exc: StatusError, doing: str = "", source: str = "") -> list[str]:
    """``Error from server (Reason): [error when <doing> "<source>": ]message`` plus any cause
    whose field the message does not already name."""
    where = f'error when {doing} "{source}": ' if doing and source else ""
    lines = [f"Error from server ({exc.reason}): {where}{exc.message}"]
    for cause in exc.causes:
        text = f"{cause.field}: {cause.message}" if cause.field else cause.message
        if text not in exc.message:
            lines.append(f"  * {text}")
    return lines
